"""`jitagent synthesize` and `jitagent solve` as a user runs them (scripted instant models, a real bank)."""

import json
import socket
import subprocess
import sys

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
    assert result["result"]["reward"] == 0.0 and result["run_id"]  # verified: the model answers 0


def test_a_model_endpoint_with_nothing_listening_is_one_line(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
        done = jitagent("solve", "What is 2 + 2?", "--meta-model", url, "--data-dir", str(tmp_path))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"jitagent solve: cannot reach the model server at {url} (All connection attempts failed); "
        f"is it running, and is the URL right?"
    ]
