"""bench/stream_rerun.py: a new run folder holding what a stream starts from, and nothing of the stream."""

import json

import pytest

from harness_bank import HarnessBank
from jitagent.harness.seeds import load_seeds


@pytest.fixture
def stream_rerun(bench_script):
    return bench_script("stream_rerun")


def finished_run(folder):
    folder.mkdir()
    rows = [{"arm": "fixed:direct", "task_id": "t1"}, {"arm": "jit_examples", "task_id": "t1"},
            {"arm": "warm:direct", "task_id": "l1"}]
    for name in ("results.jsonl", "trajectories.jsonl"):
        (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    for name in ("warm.db", "warm-examples.db", "jit_examples-r0.db", "jit_warm-r1.db",
                 "jit_examples-stream.db"):
        bank = HarnessBank(folder / name)
        bank.add_harness(load_seeds()["direct"].model_dump(mode="json"))
        bank.close()
    (folder / "tools-jit_tools.jsonl").write_text('{"kind": "tools"}\n')
    return folder


def test_the_new_folder_holds_the_warm_banks_and_every_row_but_the_arms(tmp_path, stream_rerun):
    source, new = finished_run(tmp_path / "run"), tmp_path / "again"
    carried = stream_rerun.rerun_folder(source, new, "jit_examples")
    assert carried == {"banks": ["warm-examples.db", "warm.db"], "tool_steps": ["tools-jit_tools.jsonl"],
                       "dropped_rows": 1}
    for name in ("results.jsonl", "trajectories.jsonl"):
        arms = [json.loads(line)["arm"] for line in (new / name).read_text().splitlines()]
        assert arms == ["fixed:direct", "warm:direct"]
    assert not list(new.glob("*-r*.db*")) and not list(new.glob("*-stream.db*"))  # the stream's own: rebuilt
    assert [h.name for h in HarnessBank(new / "warm.db").list_harnesses()] == ["direct"]


def test_what_cannot_be_rerun_is_refused_in_one_line_and_writes_nothing(tmp_path, stream_rerun):
    source = finished_run(tmp_path / "run")
    with pytest.raises(ValueError, match="no rows of arm 'jit_warm'"):
        stream_rerun.rerun_folder(source, tmp_path / "a", "jit_warm")
    with pytest.raises(ValueError, match="not an empty folder"):
        stream_rerun.rerun_folder(source, source, "jit_examples")
    with pytest.raises(ValueError, match="no ledger"):
        stream_rerun.rerun_folder(tmp_path, tmp_path / "b", "jit_examples")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
