"""`bank export`: training data from verified runs only, deduplicated, capped, never a held-out task (the real
bank and sandbox; a scripted solver whose program is right or wrong as a test needs it)."""

import asyncio
import json
import re

import pytest

from jitagent.cli.main import main
from jitagent.harness.seeds import load_seeds, spec_reader
from jitagent.improvement.recording import record_verified
from jitagent.improvement.training.export import ExportConfig, preference_pairs, sft_records
from jitagent.models.scripted import ScriptedModel
from jitagent.runtime.agent import Runtime
from jitagent.tasks.task import Task

SEEDS = load_seeds()
POT = SEEDS["program_of_thought"]


def task(n: int, split: str = "learn", kind: str = "times") -> Task:
    return Task(id=f"{kind}-{n}-{split}", prompt=f"What is {n} times 7?", type=kind, split=split,
                verifier={"kind": "numeric", "expected": n * 7})


def record(bank, t: Task, factor: int, spec=POT) -> None:
    """`t` run by a solver that multiplies by `factor` (7 is right), its outcome recorded."""
    def reply(messages):
        n = int(re.findall(r"What is (\d+) times", messages[-2]["content"])[-1])
        return f"print({n} * {factor})"
    run = asyncio.run(Runtime(ScriptedModel(reply)).run(spec, t))
    bank.add_harness(spec.model_dump(mode="json"))
    record_verified(bank, t, spec, run, f"type:{t.type}")


def test_sft_records_are_verified_runs_as_the_solver_saw_them_deduplicated_and_capped(seeded_bank):
    record(seeded_bank, task(1), 7)
    record(seeded_bank, task(1), 7)  # the same task and turns again: one record
    record(seeded_bank, task(2), 6)  # failed its verifier: no SFT record
    for n in (3, 4, 5):
        record(seeded_bank, task(n, kind="plus"), 7)
    records = list(sft_records(seeded_bank, spec_reader(seeded_bank), ExportConfig(per_cluster=2)))
    assert sorted((r["cluster"], r["messages"][-1]["content"].splitlines()[1]) for r in records) == [
        ("type:plus", "print(4 * 7)"), ("type:plus", "print(5 * 7)"), ("type:times", "print(1 * 7)")]
    first = records[-1]["messages"]
    shots = ["user", "assistant"] * len(POT.prompts.few_shot)  # the harness's own few-shot pairs
    assert [m["role"] for m in first] == ["system", *shots, "user", "assistant"]
    assert first[0]["content"].startswith(POT.prompts.system[:40])
    assert "What is 1 times 7?" in first[-2]["content"]
    assert all(r["reward"] == 1.0 and r["run_id"].startswith("outcome:") for r in records)


def test_preference_pairs_join_a_passed_and_a_failed_run_of_the_same_task(seeded_bank):
    record(seeded_bank, task(2), 6)
    record(seeded_bank, task(2, split="score"), 7)  # another id, the same text
    record(seeded_bank, task(3), 7)  # passed only: no pair
    pairs = list(preference_pairs(seeded_bank, spec_reader(seeded_bank), ExportConfig()))
    assert len(pairs) == 1
    pair = pairs[0]
    assert "print(2 * 7)" in pair["chosen"][0]["content"] and "print(2 * 6)" in pair["rejected"][0]["content"]
    assert pair["prompt"][-1]["role"] == "user" and pair["chosen_run_id"] != pair["rejected_run_id"]


def test_the_command_never_exports_a_held_out_task(seeded_bank, tmp_path, capsys):
    record(seeded_bank, task(1), 7)
    record(seeded_bank, task(8, split="final"), 7)  # a final task that reached the bank (a stream's)
    record(seeded_bank, task(8, split="final"), 5)
    seeded_bank.close()
    suite = tmp_path / "suite.jsonl"
    suite.write_text(task(8, split="final").model_dump_json() + "\n")
    sft, pairs = tmp_path / "sft.jsonl", tmp_path / "pairs.jsonl"
    argv = ["bank", "export", "--bank", str(tmp_path / "bank.db"), "--sft", str(sft), "--pairs", str(pairs)]
    assert main([*argv, "--held-out-suite", str(suite)]) == 0
    assert f"1 record(s) -> {sft}" in capsys.readouterr().out
    assert [json.loads(line)["messages"][-2]["content"] for line in sft.read_text().splitlines()] == [
        POT.prompts.step.replace("{task}", "What is 1 times 7?")]
    assert pairs.read_text() == ""
    assert main(argv) == 0 and len(pairs.read_text().splitlines()) == 1  # not held out: 8's pair is there
    with pytest.raises(SystemExit) as bad:
        main([*argv, "--min-reward", "2"])
    assert bad.value.code == 2 and capsys.readouterr().err.strip().startswith(
        "jitagent bank export: --min-reward: must be between 0 and 1, got 2")
