"""A's verify stage: the harness's own check of an answer before it stands (never the task's hidden
verifier). A failure is fed to the next attempt's reflection. One class per kind."""

from __future__ import annotations

from typing import ClassVar

from jitagent.harness.spec import ActionSpec
from jitagent.runtime.stage import RunContext, Stage
from jitagent.sandbox.launch import sandbox_python
from jitagent.tasks.verifiers import code_of


class Verify(Stage):
    """The base lets every answer stand."""

    kinds: ClassVar[dict[str, type[Verify]]] = {}
    section, field = "action", "verify"
    spec: ActionSpec

    async def failure(self, run: RunContext, answer: str) -> str | None:
        """What is wrong with `answer`, or None."""
        return None


class NoCheck(Verify, kind="none"):
    """No check."""


class SelfCheck(Verify, kind="self_check"):
    """The model judges the answer correct or wrong."""

    async def failure(self, run: RunContext, answer: str) -> str | None:
        text = await run.ask("self_check", 48, task=run.task.prompt, answer=answer)
        return None if "WRONG" not in text.upper() else f"self-check: {text.strip()}"


class RunTests(Verify, kind="run_tests"):
    """The answer's code runs with the task's public tests, in the sandbox."""

    async def failure(self, run: RunContext, answer: str) -> str | None:
        program = code_of(answer) + "\n\n" + (run.task.public_tests or "")
        if not program.strip():
            return None
        result = await run.toolbox.workspace.run([sandbox_python(), "-c", program], run.toolbox.limits,
                                                 deadline=run.cancel.deadline)
        return None if result.ok else f"running the answer's code failed:\n{result.describe()[-800:]}"
