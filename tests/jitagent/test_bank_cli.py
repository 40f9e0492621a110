"""`jitagent bank ...` end to end on a real SQLite file and faiss index."""

import json
import subprocess
import sys


def bank(tmp_path, *args):
    proc = subprocess.run([sys.executable, "-m", "jitagent", "bank", *args, "--data-dir", str(tmp_path),
                           "--json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_init_search_ls_show_lineage_stats_reindex(tmp_path):
    assert bank(tmp_path, "init")["seeds"] == 13
    hits = bank(tmp_path, "search", "write a python function that reverses a string", "-k", "3")
    names = [h["name"] for h in hits]
    assert len(hits) == 3 and "direct" not in names and all(isinstance(h["score"], float) for h in hits)
    listed = bank(tmp_path, "ls")
    assert len(listed) == 13 and {r["origin"] for r in listed} == {"seed"}
    shown = bank(tmp_path, "show", listed[0]["id"])
    assert shown["spec"]["name"] == listed[0]["name"]
    assert [h["id"] for h in bank(tmp_path, "lineage", listed[0]["id"])] == [listed[0]["id"]]
    stats = bank(tmp_path, "stats")
    assert stats["harnesses"] == 13 and stats["index_size"] == 13 and stats["db_bytes"] > 0
    assert bank(tmp_path, "reindex")["vectors"] == 13
    assert bank(tmp_path, "incumbents") == []


def test_unknown_id_and_rollback_without_history_are_clear_errors(tmp_path):
    bank(tmp_path, "init")
    for args, fragment in ((["show", "nope"], "unknown harness id"),
                           (["rollback", "type:x"], "no incumbent")):
        proc = subprocess.run([sys.executable, "-m", "jitagent", "bank", "--path", str(tmp_path / "bank.db"),
                               *args],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 2 and fragment in proc.stderr


def test_a_bank_path_that_cannot_be_used_is_one_line_not_a_traceback(tmp_path):
    (tmp_path / "bank.db").mkdir()
    proc = subprocess.run([sys.executable, "-m", "jitagent", "bank", "--path", str(tmp_path / "bank.db"),
                           "stats"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"jitagent bank stats: data dir {tmp_path}: bank.db is not a file"]


def test_a_read_only_command_on_a_bank_that_does_not_exist_creates_nothing(tmp_path):
    for args in (["bank", "--path", str(tmp_path / "typo.db"), "stats"],
                 ["bank", "ls", "--data-dir", str(tmp_path / "d")]):
        proc = subprocess.run([sys.executable, "-m", "jitagent", *args], capture_output=True, text=True,
                              timeout=300)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert "no bank at" in proc.stderr and "jitagent bank init" in proc.stderr
    assert list(tmp_path.iterdir()) == []


def test_warm_runs_a_first_pass_then_the_top_seeds_and_resumes(tmp_path):
    lines = [json.dumps({"id": f"{kind}-{i}", "prompt": f"{kind} task {i}", "type": kind, "split": "learn",
                         "verifier": {"kind": "numeric", "expected": 0}}) for kind in ("add", "echo")
             for i in range(3)]
    suite = tmp_path / "tiny.jsonl"
    suite.write_text("\n".join(lines))
    args = ("warm", "--suite", str(suite), "--seeds", "top:2", "--solver-model", "scripted")
    warmed = bank(tmp_path, *args)
    assert warmed["tasks"] == 6 and len(warmed["seeds"]) == 2
    # the first pass: 13 seeds on one task per type; then the 2 best on the other 4 tasks
    assert warmed["stats"]["outcomes"] == 13 * 2 + 2 * 4 and warmed["stats"]["clusters"] == 2
    assert bank(tmp_path, *args)["stats"]["outcomes"] == warmed["stats"]["outcomes"]  # nothing ran twice
