"""The client's side of a verdict: a bench checks each arm's answer (its calls, under a calls verifier) as the
task's client would, in a workspace of the task's files."""

from __future__ import annotations

import dataclasses

from jitagent.runtime.events import RunResult
from jitagent.sandbox.launch import Workspace
from jitagent.tasks.calls import judged
from jitagent.tasks.task import Task
from jitagent.tasks.verifiers import verify


async def checked(task: Task, answer: str | None):
    """The task's verdict on an answer, as its client would check it (in a workspace of the task's files)."""
    workspace = Workspace(task.files)
    try:
        return await verify(task, answer, workspace)
    finally:
        workspace.close()


async def scored(task: Task, run: RunResult) -> RunResult:
    """The run as its client checks it: the task's verdict on its answer (on its calls, under a calls
    verifier)."""
    verdict = await checked(task, judged(task.verifier.kind, run.answer, run.client_calls))
    return dataclasses.replace(run, reward=verdict.reward, passed=verdict.passed, verdict=verdict.detail)
