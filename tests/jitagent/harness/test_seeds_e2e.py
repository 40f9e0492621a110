"""Every seed scaffold runs end to end on the default embedded model (Qwen2.5-Coder-0.5B)."""

import asyncio
import json
import subprocess
import sys

import pytest

from jitagent.harness.seeds import load_seeds
from jitagent.models import load_model
from jitagent.runtime.agent import Runtime
from jitagent.tasks.task import Task

pytestmark = pytest.mark.slow

TASKS = {
    "text": Task(id="rev", prompt="Reverse the string 'stressed'. Answer with the reversed string only.",
                 verifier={"kind": "exact", "expected": "desserts", "case_sensitive": True}),
    "function": Task(id="fn", prompt="Write a Python function `double(x)` that returns x times 2.",
                     public_tests="assert double(2) == 4",
                     verifier={"kind": "python_tests", "tests": "assert double(5) == 10"}),
    "file": Task(id="file", prompt="How many lines does notes.txt have? Answer with the number.",
                 files={"notes.txt": "a\nb\nc\n"}, verifier={"kind": "numeric", "expected": 3}),
}
TASK_FOR = {"test_driven": "function", "react": "file", "plan_and_execute": "file", "codeact": "file"}


@pytest.fixture(scope="module")
def runtime():
    return Runtime(load_model("embedded"))


@pytest.mark.parametrize("name", list(load_seeds()))
def test_seed_runs_end_to_end(runtime, name):
    task = TASKS[TASK_FOR.get(name, "text")]
    result = asyncio.run(runtime.run(load_seeds()[name], task))
    kinds = [e.kind for e in result.trajectory.events]
    assert result.error is None, result.error
    assert "model" in kinds
    assert result.cost.completion_tokens > 0 and result.cost.prompt_tokens > 0 and result.cost.wall_s > 0
    assert 0.0 <= result.reward <= 1.0 and result.verdict


def test_cli_run_prints_a_table_and_writes_json(tmp_path):
    out = tmp_path / "run.json"
    proc = subprocess.run([sys.executable, "-m", "jitagent", "run", "--harness", "program_of_thought",
                           "--suite", "starter",
                           "--split", "score", "--limit", "2", "--out", str(out)], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "success" in proc.stdout and "arithmetic-002" in proc.stdout
    data = json.loads(out.read_text())
    assert data["summary"]["n"] == 2 and len(data["results"]) == 2 and data["model"] == "qwen2.5-coder-0.5b"
