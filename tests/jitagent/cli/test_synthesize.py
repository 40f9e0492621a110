"""`jitagent synthesize` and `jitagent solve` as a user runs them (scripted instant models, a real bank)."""

import json
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import yaml


def jitagent(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "jitagent", *args], capture_output=True, text=True, timeout=timeout
    )


def test_synthesize_writes_plain_yaml_to_a_pipe_that_validate_accepts(tmp_path):
    done = jitagent(
        "synthesize",
        "Reverse the string 'stressed'. " + "Explain each step. " * 10,
        "--meta-model",
        "scripted",
        "--no-dry-run",
        "--n",
        "1",
        "--data-dir",
        str(tmp_path / "data"),
    )
    assert done.returncode == 0, done.stderr
    spec = yaml.safe_load(done.stdout)
    assert spec["envelope"]["id"] and "route" in done.stderr  # the report goes to stderr
    (tmp_path / "spec.yaml").write_text(done.stdout)
    assert jitagent("validate", str(tmp_path / "spec.yaml")).returncode == 0
    to_file = jitagent(
        "synthesize",
        "Reverse the string 'stressed'.",
        "--meta-model",
        "scripted",
        "--no-dry-run",
        "--data-dir",
        str(tmp_path / "data"),
        "--out",
        str(tmp_path / "spec.json"),
    )
    assert to_file.returncode == 0 and to_file.stdout == ""
    assert json.loads((tmp_path / "spec.json").read_text())["envelope"]["id"]


def test_solve_with_an_expected_answer_is_verified(tmp_path):
    done = jitagent(
        "solve",
        "What is 2 + 2?",
        "--expect",
        "4",
        "--meta-model",
        "scripted",
        "--no-dry-run",
        "--data-dir",
        str(tmp_path),
        "--json",
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["reward"] == 0.0 and result["run_id"]  # verified: the model answers 0


def test_solve_check_exits_1_when_the_verifier_fails_the_answer_and_prints_the_run_id(tmp_path):
    args = ("--meta-model", "scripted", "--no-dry-run", "--n", "1", "--data-dir", str(tmp_path))
    wrong = jitagent("solve", "What is 2 + 2?", "--expect", "4", "--check", *args)
    assert wrong.returncode == 1 and " reward=0 " in wrong.stdout, wrong.stderr  # a script can branch on it
    assert re.match(r"result: run_id=[0-9a-f]{32} ", wrong.stdout)  # the id a report names
    assert jitagent("solve", "What is 2 + 2?", "--harness", "direct", "--expect", "4", "--check",
                    *args).returncode == 1
    unchecked = jitagent("solve", "What is 2 + 2?", "--check", *args)
    assert unchecked.returncode == 2
    assert unchecked.stderr.strip() == ("jitagent solve: --check needs --expect or --verifier: without one "
                                        "nothing checks the answer")


def test_a_model_endpoint_with_nothing_listening_is_one_line(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
        done = jitagent("solve", "What is 2 + 2?", "--meta-model", url, "--data-dir", str(tmp_path))
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (  # after the progress lines, the failure: one line
        f"jitagent solve: model back-end failed: cannot reach the model server at {url} (All connection "
        "attempts failed); "
        f"is it running, and is the URL right?")


def test_local_solve_streams_the_events_client_solve_shows_and_takes_the_task_from_stdin(tmp_path):
    done = subprocess.run([sys.executable, "-m", "jitagent", "solve", "-", "--expect", "0", "--check",
                           "--meta-model", "scripted", "--no-dry-run", "--n", "1", "--data-dir",
                           str(tmp_path)],
                          input="What is 0 + 0?\n", capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    events = [line.split(":")[0] for line in done.stderr.splitlines()]
    assert {"retrieved", "candidate", "routed", "chosen", "step/model", "verdict", "bank"} <= set(events)
    assert events.index("routed") < events.index("chosen") < events.index("verdict")
    assert " reward=1 " in done.stdout  # the text came from stdin, newline dropped: "0" is right


def test_solve_runs_the_spec_synthesize_wrote_without_synthesizing_again(tmp_path):
    data = str(tmp_path / "data")
    (tmp_path / "task.txt").write_text("How many times does the letter r occur in 'strawberry'?\n")
    written = jitagent("synthesize", "--file", str(tmp_path / "task.txt"), "--meta-model", "scripted",
                       "--no-dry-run", "--n", "1", "--data-dir", data, "--out", str(tmp_path / "spec.yaml"))
    assert written.returncode == 0, written.stderr
    assert "candidate: valid" in written.stderr  # the synthesis's events, as they happen
    ran = jitagent("solve", "--file", str(tmp_path / "task.txt"), "--expect", "3", "--harness",
                   str(tmp_path / "spec.yaml"), "--meta-model", "scripted", "--data-dir", data, "--json")
    assert ran.returncode == 0, ran.stderr
    result = json.loads(ran.stdout)
    assert result["harness_id"] == yaml.safe_load((tmp_path / "spec.yaml").read_text())["envelope"]["id"]
    assert result["result"]["verdict"] and "retrieved" not in ran.stderr and "step/model" in ran.stderr
    by_name = jitagent("solve", "What is 0 + 0?", "--harness", "direct", "--meta-model", "scripted")
    assert by_name.returncode == 0 and by_name.stdout.startswith("result: harness=direct ")


def test_a_task_over_the_size_cap_or_given_twice_is_refused_before_any_work(tmp_path):
    (tmp_path / "huge.txt").write_text("x" * 1_000_001)
    huge = jitagent("solve", "--file", str(tmp_path / "huge.txt"), "--meta-model", "scripted", "--data-dir",
                    str(tmp_path / "data"))
    assert huge.returncode == 2 and "1,000,001 characters; a task's text is at most 100,000" in huge.stderr
    both = jitagent("solve", "x", "--file", str(tmp_path / "huge.txt"), "--meta-model", "scripted")
    assert both.returncode == 2 and "give the task as an argument, - to read it from stdin" in both.stderr
    assert not (tmp_path / "data").exists()


def test_the_scripted_model_is_refused_on_a_bank_that_is_kept(tmp_path):
    kept = Path.home() / f".jitagent-test-{tmp_path.name}"
    try:
        done = jitagent("solve", "What is 2 + 2?", "--meta-model", "scripted", "--data-dir", str(kept))
        assert done.returncode == 2 and "canned replies" in done.stderr and "throwaway" in done.stderr
        assert not (kept / "bank.db").exists()  # refused before the bank was made
    finally:
        shutil.rmtree(kept, ignore_errors=True)
