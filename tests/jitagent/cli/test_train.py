"""`jitagent train` as a user runs it, on a real bank with SmolLM2-135M: an adapter trained from the bank's
verified runs, listed and shown with its lineage and cost, gated on a suite's score split; a bad setting is
one line and exit status 2."""

import json
from pathlib import Path

import pytest

from jitagent.cli.main import main

from ..improvement.training.test_correct import record, task

pytestmark = pytest.mark.slow
TRAIN = ["--solver-model", "smollm2-135m", "--rank", "4", "--epochs", "1", "--accumulate", "1",
         "--learning-rate", "0.003", "--name", "times"]


def test_train_lists_shows_and_gates_an_adapter(seeded_bank, tmp_path, capsys):
    for n in (2, 3):
        record(seeded_bank, task(n), 7)
    seeded_bank.close()
    bank = ["--bank", str(tmp_path / "bank.db")]
    suite = tmp_path / "suite.jsonl"
    suite.write_text("".join(task(n, split="score").model_dump_json() + "\n" for n in (5, 6)))
    assert main(["train", *bank, *TRAIN, "--gate", str(suite), "--budget-s", "30", "--json"]) == 0
    trained = json.loads(capsys.readouterr().out)
    assert trained["stats"]["examples"] == 2 and trained["served_as"] == f"adapter-{trained['adapter']}"
    assert trained["gate"]["tasks"] == 2 and isinstance(trained["gate"]["accepted"], bool)
    assert (tmp_path / "bank.db.train-times" / "checkpoint.pt").exists()  # resumable beside the bank
    assert main(["bank", "adapters", *bank, "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert listed["id"] == trained["adapter"] and listed["gate"]["tasks"] == 2
    assert main(["bank", "show", trained["adapter"], *bank, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["lineage"] == [trained["adapter"]] and shown["config"]["rank"] == 4
    assert shown["stats"]["train_s"] > 0 and len(shown["gate"]["units"]) == 2
    if trained["gate"]["accepted"]:  # its variants ran on the gate's tasks: evidence of their own
        assert sum(e["runs"] for e in shown["evidence"]) == 2
    assert main(["bank", "adapters", "times", "--files", str(tmp_path / "out"), *bank, "--json"]) == 0
    files = json.loads(capsys.readouterr().out)
    assert Path(files["gguf"]).read_bytes()[:4] == b"GGUF"  # llama.cpp's file, and vLLM's folder
    assert sorted(p.name for p in (tmp_path / "out").glob("*-peft/*")) == ["adapter_config.json",
                                                                          "adapter_model.safetensors"]


def test_a_bad_setting_or_an_empty_bank_is_one_line(seeded_bank, tmp_path, capsys):
    seeded_bank.close()
    bank = ["--bank", str(tmp_path / "bank.db")]
    with pytest.raises(SystemExit) as usage:
        main(["train", *bank, "--rank", "0"])
    assert usage.value.code == 2 and "--rank: must be between 1 and 256, got 0" in capsys.readouterr().err
    assert main(["train", *bank, *TRAIN]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("jitagent train: the bank holds no verified run to learn from")
    assert main(["train", *bank, "--solver-model", "http://127.0.0.1:9"]) == 2
    assert "trains an embedded model" in capsys.readouterr().err
