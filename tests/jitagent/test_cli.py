"""`jitagent` itself as a user runs it: --version, `run` (spread over types, unverified tasks apart)."""

import json
import subprocess
import sys

from jitagent import __version__


def jitagent(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "jitagent", *args], capture_output=True, text=True, timeout=timeout
    )


def test_version():
    done = jitagent("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"jitagent {__version__}"


def test_run_limit_spreads_over_task_types():
    done = jitagent(
        "run",
        "--harness",
        "direct",
        "--suite",
        "starter",
        "--split",
        "score",
        "--limit",
        "4",
        "--solver-model",
        "scripted",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    ids = [r["task_id"] for r in json.loads(done.stdout)["results"]]
    assert len(ids) == 4 and len({i.rsplit("-", 1)[0] for i in ids}) == 4  # one of each of the 4 types


def test_run_counts_success_over_verified_tasks_only(tmp_path):
    suite = tmp_path / "mixed.jsonl"
    suite.write_text(
        "\n".join(
            json.dumps(t)
            for t in (
                {"id": "zero", "prompt": "What is 0 + 0?", "verifier": {"kind": "numeric", "expected": 0}},
                {"id": "one", "prompt": "What is 0 + 1?", "verifier": {"kind": "numeric", "expected": 1}},
                {"id": "poem", "prompt": "Write a haiku."},
            )
        )
    )
    report = jitagent(
        "run",
        "--harness",
        "direct",
        "--suite",
        str(suite),
        "--model",
        "scripted",
        "--json",
        "--out",
        str(tmp_path / "run.json"),
    )  # --model: the old spelling, still accepted
    assert report.returncode == 0, report.stderr
    summary = json.loads(report.stdout)["summary"]
    assert (summary["n"], summary["verified"], summary["success_rate"]) == (3, 2, 0.5)  # the model answers 0
    assert json.loads((tmp_path / "run.json").read_text())["summary"] == summary
    poem = next(r for r in json.loads(report.stdout)["results"] if r["task_id"] == "poem")
    assert poem["reward"] is None and poem["passed"] is None
    shown = jitagent("run", "--harness", "direct", "--suite", str(suite), "--solver-model", "scripted")
    assert "success 50.0% of 2 verified (1 unverified)" in shown.stdout and "unverified" in shown.stdout
