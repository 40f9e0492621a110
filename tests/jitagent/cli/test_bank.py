"""`jitagent bank ...` end to end on a real SQLite file and faiss index."""

import json
import subprocess
import sys

import pytest

from jitagent.harness.seeds import load_seeds, seeds_for

SEEDS = len(load_seeds())
RUN = len(seeds_for([]))  # the seeds that run tasks without the client's functions (all but `plain`)


def bank(tmp_path, *args, status=0):
    proc = bank_run(tmp_path, *args, "--json")
    assert proc.returncode == status, proc.stderr
    return json.loads(proc.stdout)


def bank_run(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "jitagent", "bank", *args, "--data-dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)


def tiny_suite(tmp_path, kinds=("add", "echo"), per_kind=3):
    lines = [json.dumps({"id": f"{kind}-{i}", "prompt": f"{kind} task {i}", "type": kind, "split": "learn",
                         "verifier": {"kind": "numeric", "expected": 0}}) for kind in kinds
             for i in range(per_kind)]
    suite = tmp_path / "tiny.jsonl"
    suite.write_text("\n".join(lines))
    return suite


def test_init_search_ls_show_lineage_stats_reindex(tmp_path):
    assert bank(tmp_path, "init")["seeds"] == SEEDS
    hits = bank(tmp_path, "search", "write a python function that reverses a string", "-k", "3")
    names = [h["name"] for h in hits]
    assert len(hits) == 3 and "direct" not in names and all(isinstance(h["score"], float) for h in hits)
    listed = bank(tmp_path, "ls")
    assert len(listed) == SEEDS and {r["origin"] for r in listed} == {"seed"}
    shown = bank(tmp_path, "show", listed[0]["id"])
    assert shown["spec"]["name"] == listed[0]["name"]
    assert [h["id"] for h in bank(tmp_path, "lineage", listed[0]["id"])] == [listed[0]["id"]]
    stats = bank(tmp_path, "stats")
    assert stats["harnesses"] == SEEDS and stats["index_size"] == SEEDS and stats["db_bytes"] > 0
    assert bank(tmp_path, "reindex")["vectors"] == SEEDS
    assert bank(tmp_path, "incumbents") == []


def test_unknown_id_and_rollback_without_history_are_clear_errors(tmp_path):
    bank(tmp_path, "init")
    for args, fragment in ((["show", "nope"], "no harness with id or name 'nope'"),
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
    suite = tiny_suite(tmp_path)
    args = ("warm", "--suite", str(suite), "--seeds", "top:2", "--solver-model", "scripted")
    warmed = bank(tmp_path, *args)
    # the 2 best, then each one's variant shown its cluster's verified solutions
    assert warmed["tasks"] == 6 and warmed["seeds"][2:] == [f"{s}+ex2" for s in warmed["seeds"][:2]]
    # the first pass: every seed on a task per type; then the 2 best on the other 4 tasks, their variants on 6
    assert warmed["stats"]["outcomes"] == RUN * 2 + 2 * 4 + 2 * 6 and warmed["stats"]["clusters"] == 2
    assert bank(tmp_path, *args)["stats"]["outcomes"] == warmed["stats"]["outcomes"]  # nothing ran twice


def test_warm_records_nothing_that_failed_for_a_reason_of_the_command_line_and_redo_replaces(tmp_path):
    """A budget the runs cannot meet is the command line's doing, not the harnesses': nothing is
    recorded, the command says so (status 1), and a rerun with a workable budget runs every unit."""
    suite = tiny_suite(tmp_path, kinds=("add",), per_kind=1)
    refused = bank_run(tmp_path, "warm", "--suite", str(suite), "--budget-s", "-5", "--no-examples",
                      "--solver-model",
                       "scripted")
    assert refused.returncode == 2 and "--budget-s: must be more than 0, got -5" in refused.stderr
    cut = bank(tmp_path, "warm", "--suite", str(suite), "--budget-s", "0.05", "--no-examples",
               "--solver-model",
               "scripted:200", status=1)
    # a one-step harness whose only model call outlasts the budget still finished: it is recorded
    assert cut["not_recorded"] >= 1 and cut["stats"]["outcomes"] == RUN - cut["not_recorded"]
    warmed = bank_run(tmp_path, "warm", "--suite", str(suite), "--budget-s", "60", "--no-examples",
                      "--solver-model",
                      "scripted", "--json")
    assert warmed.returncode == 0 and json.loads(warmed.stdout)["stats"]["outcomes"] == RUN
    assert warmed.stderr.count("add-0: reward") == cut["not_recorded"]  # what was cut ran again, only that
    redone = bank_run(tmp_path, "warm", "--suite", str(suite), "--solver-model", "scripted", "--redo",
                      "--no-examples", "--json")
    assert redone.returncode == 0 and redone.stderr.count("add-0: reward") == RUN  # each unit ran again
    assert json.loads(redone.stdout)["stats"]["outcomes"] == RUN  # and replaced its outcome


@pytest.fixture(scope="module")
def warmed(tmp_path_factory):
    """A bank with the seeds' outcomes on two clusters (the scripted solver answers 0: right on `add`);
    the seeds only (the examples variants warm adds are tested above)."""
    where = tmp_path_factory.mktemp("warmed")
    lines = [json.dumps({"id": f"{kind}-{i}", "prompt": f"{kind} task {i}", "type": kind, "split": "learn",
                         "verifier": {"kind": "numeric", "expected": 0 if kind == "add" else 1}})
             for kind in ("add", "echo") for i in range(2)]
    (where / "suite.jsonl").write_text("\n".join(lines))
    bank(where, "warm", "--suite", str(where / "suite.jsonl"), "--solver-model", "scripted", "--no-examples")
    return where


def test_clusters_show_what_the_bank_learned(warmed):
    clusters = {c["cluster"]: c for c in bank(warmed, "clusters")}
    assert set(clusters) == {"type:add", "type:echo"}
    add = clusters["type:add"]
    assert (add["outcomes"], add["tasks"]) == (2 * RUN, 2) and add["best"]["runs"] == 2
    assert add["best"]["low"] < add["best"]["posterior_mean"] < add["best"]["high"]
    assert clusters["type:echo"]["best"]["posterior_mean"] < add["best"]["posterior_mean"]
    shown = bank_run(warmed, "clusters")
    assert shown.returncode == 0 and "type:add" in shown.stdout and "95% interval" in shown.stdout


def test_arms_list_each_arms_posterior_and_plot_them_over_time(warmed, tmp_path):
    arms = bank(warmed, "arms", "type:add", "--plot", str(tmp_path / "add.png"))
    assert len(arms) == RUN and all(a["runs"] == 2 for a in arms)
    assert [a["posterior_mean"] for a in arms] == sorted((a["posterior_mean"] for a in arms), reverse=True)
    assert all(0 <= a["mean_reward"] <= 1 and a["routes"] == {} for a in arms)  # warm: no server routes
    assert (tmp_path / "add.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    unknown = bank_run(warmed, "arms", "type:nope")
    assert unknown.returncode == 2 and "no cluster 'type:nope'" in unknown.stderr


def test_show_finds_a_harness_by_name_with_its_code_lineage_and_evidence(warmed):
    shown = bank(warmed, "show", "program_of_thought")
    assert shown["name"] == "program_of_thought" and shown["lineage"][0]["id"] == shown["id"]
    assert {e["cluster"] for e in shown["evidence"]} == {"type:add", "type:echo"}
    assert all(e["runs"] == 2 for e in shown["evidence"])
    assert bank(warmed, "show", shown["id"])["id"] == shown["id"]
    text = bank_run(warmed, "show", "program_of_thought")
    assert text.returncode == 0 and "lineage: program_of_thought" in text.stdout and "type:add" in text.stdout
