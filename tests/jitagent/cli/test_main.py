"""`jitagent` itself as a user runs it: --version, `run` (spread over types, unverified tasks apart)."""

import json
import socket
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


def test_run_says_why_each_task_failed_and_a_failure_not_the_harness_s_is_status_1(tmp_path):
    suite = tmp_path / "two.jsonl"
    tasks = [{"id": f"t{i}", "prompt": f"What is {i} + 1?",
              "verifier": {"kind": "numeric", "expected": i + 1}} for i in range(2)]
    suite.write_text("\n".join(json.dumps(t) for t in tasks))
    wrong = jitagent("run", "--harness", "direct", "--suite", str(suite), "--solver-model", "scripted")
    assert wrong.returncode == 0, wrong.stderr
    assert "why" in wrong.stdout and "expected 1" in wrong.stdout  # the verdict, in the table
    assert "[1/2] direct: t0: no" in wrong.stderr and "[2/2] direct: t1: no" in wrong.stderr  # piped progress
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{s.getsockname()[1]}"
        failed = jitagent("run", "--harness", "direct", "--suite", str(suite), "--solver-model", down)
    assert failed.returncode == 1
    assert "error: model failed: cannot reach the model server" in failed.stdout  # the table says it
    assert failed.stderr.strip().splitlines()[-1].startswith(
        "jitagent run: 2 of 2 task(s) failed for a reason that is not the harness's, e.g. t0: model failed")


def test_run_shows_a_multiline_failure_as_one_line_cut_at_a_word(tmp_path):
    """A traceback for a verdict: one progress line and one table row, cut at a word, no quote left open."""
    suite = tmp_path / "code.jsonl"
    suite.write_text(json.dumps({"id": "code", "prompt": "Write solve(x) returning x + 1.",
                                 "verifier": {"kind": "python_tests", "tests": "assert solve(1) == 2"}}))
    done = jitagent("run", "--harness", "direct", "--suite", str(suite), "--solver-model", "scripted")
    assert done.returncode == 0, done.stderr
    progress = [line for line in done.stderr.splitlines() if line.startswith("[1/1]")]
    assert len(progress) == 1 and len(done.stderr.strip().splitlines()) == 2, done.stderr  # and `loading`
    assert progress[0].startswith("[1/1] direct: code: no ([stderr] Traceback") and "...) (" in progress[0]
    assert len([line for line in done.stdout.splitlines() if line.startswith("│")]) == 1, done.stdout


def test_brief_cuts_at_a_word_and_closes_the_quote_it_cut():
    from jitagent.common.errors import brief

    assert brief("a\n  b\tc") == "a b c"
    assert brief("NameError: name 'solve' is not defined", 24) == "NameError: name..."
    assert brief("x = 'abcdefghijklmnopqrstuvwxyz0123456789'", 30) == "x = 'abcdefghijklmnopqrstu...'"
    assert brief("it's what don't work here at all", 20) == "it's what don't..."


def test_run_says_a_model_call_goes_on_while_it_waits():
    """`run` piped: a model that takes 11 s answers one task; meanwhile a line says the work goes on."""
    done = jitagent("run", "--harness", "direct", "--suite", "starter", "--limit", "1", "--solver-model",
                    "scripted:10500")
    assert done.returncode == 0 and "... working: 10s since the last step" in done.stderr


def test_a_silent_wait_says_that_the_work_goes_on_piped(capsys):
    """A model call between two events says nothing; piped, the wait is a line every `every_s` seconds,
    and the events come through as they were."""
    import asyncio

    from jitagent.cli.progress import heartbeat

    async def slow():
        for event in ("chosen", "result"):
            await asyncio.sleep(0.35)
            yield event

    async def main():
        return [event async for event in heartbeat(slow(), every_s=0.1)]
    assert asyncio.run(main()) == ["chosen", "result"]
    ticks = capsys.readouterr().err.splitlines()
    assert len(ticks) >= 4 and all(t.startswith("... working: ") and t.endswith("s since the last step")
                                   for t in ticks), ticks


def test_validate_refuses_a_spec_whose_words_contradict_its_fields(tmp_path):
    import subprocess
    import sys

    import yaml

    from jitagent.harness.seeds import load_seeds

    spec = load_seeds()["program_of_thought"].model_dump(mode="json")
    spec["action"] |= {"kind": "direct", "answer_from": "text"}  # its prompt still asks for a program
    spec["tools"]["tools"] = []
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(spec))
    done = subprocess.run([sys.executable, "-m", "jitagent", "validate", str(tmp_path / "spec.yaml")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "'direct' never runs code" in done.stderr, done.stderr
