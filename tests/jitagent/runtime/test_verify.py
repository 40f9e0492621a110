"""Verify kinds: the harness's own check of an answer."""

import asyncio
from types import SimpleNamespace

from jitagent.harness.spec import ActionSpec
from jitagent.runtime.verify import Verify
from jitagent.sandbox.launch import SandboxLimits, Workspace


def failure(kind: str, answer: str, public_tests: str | None = None) -> str | None:
    async def go():
        workspace = Workspace({})
        try:
            run = SimpleNamespace(task=SimpleNamespace(public_tests=public_tests),
                                  cancel=SimpleNamespace(deadline=None),
                                  toolbox=SimpleNamespace(workspace=workspace, limits=SandboxLimits()))
            return await Verify.kinds[kind](ActionSpec(verify=kind)).failure(run, answer)
        finally:
            workspace.close()
    return asyncio.run(go())


def test_run_tests_runs_the_answers_code_with_the_public_tests():
    answer = "```python\ndef double(x):\n    return x + 2\n```"
    assert failure("run_tests", answer.replace("x + 2", "x * 2"), "assert double(3) == 6") is None
    problem = failure("run_tests", answer, "assert double(3) == 6")
    assert problem.startswith("running the answer's code failed") and "AssertionError" in problem


def test_no_check_lets_any_answer_stand():
    assert failure("none", "surely wrong") is None
