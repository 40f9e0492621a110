"""Trials: code written for a cluster, run in the sandbox on the cluster's labelled tasks and scored by each
task's own verifier — what the harness carrying it would have earned there.

A harness with code runs its `solve` stage first; where that gives no answer its own loop answers, and the
`answer` stage puts the loop's answer in form (jitagent.runtime.agent). The loop's answer and reward on a
labelled task are known from the parent's recorded run, so a trial costs sandbox time, not model tokens."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from jitagent.harness.spec import CodeSection
from jitagent.runtime.stage_code import StageCall, call_stage_each
from jitagent.sandbox.launch import Workspace
from jitagent.tasks.task import Task
from jitagent.tasks.verifiers import verify

PER_CALL_S = 2.0  # code written for a task family answers in well under a second, or not at all


@dataclass(frozen=True, kw_only=True)
class Labelled:
    """A labelled task of the cluster, and what the cluster's best harness (the parent) did on it."""

    task: Task
    reference: str | None  # a correct answer, where the verifier states one
    reward: float  # the parent's measured reward
    answer: str | None  # the parent's answer
    prompt_tokens: int | None = None  # what the parent's run cost (None: unknown)
    completion_tokens: int | None = None
    wall_s: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Scored:
    """One labelled task under a trial: the answer, its reward, and whether code gave it."""

    answer: str | None
    reward: float
    by_code: bool
    error: str | None = None  # what the code did wrong there, if anything


def own_workspace(task: Task) -> bool:
    """A task whose files or verifier use the workspace is tried alone in a workspace of its own."""
    return bool(task.files) or task.verifier.kind in ("python_tests", "shell_check")


async def run_stage(section: CodeSection, inputs: list[dict], tasks: list[Task]) -> list[StageCall]:
    """The stage on each input: the tasks that need no workspace of their own in one sandboxed process."""
    calls: list[StageCall | None] = [None] * len(inputs)
    shared = [i for i, t in enumerate(tasks) if not own_workspace(t)]
    if shared:
        with Workspace() as workspace:
            results = await call_stage_each(section, [inputs[i] for i in shared], workspace,
                                            per_call_s=PER_CALL_S)
        for i, result in zip(shared, results):
            calls[i] = result
    for i, task in enumerate(tasks):
        if calls[i] is None:
            with Workspace(task.files) as workspace:
                calls[i] = (await call_stage_each(section, [inputs[i]], workspace, per_call_s=PER_CALL_S))[0]
    return calls


async def score(task: Task, answer: str) -> float:
    with Workspace(task.files) as workspace:
        try:
            return (await verify(task, answer, workspace)).reward or 0.0
        except Exception:  # a verifier that crashes on an answer scores it 0, as in a run
            return 0.0


async def trial(code: dict[str, str], labelled: list[Labelled]) -> list[Scored]:
    """What a harness with these code sections (stage → source) earns on the labelled tasks: its solve
    stage's answers where it gives one, else the parent's answer put in form by its answer stage."""
    tasks = [item.task for item in labelled]
    solved: list[StageCall | None] = [None] * len(labelled)
    if "solve" in code:
        solved = await run_stage(CodeSection(stage="solve", source=code["solve"]),
                                 [{"task": t.prompt} for t in tasks], tasks)
    loop = [i for i, call in enumerate(solved) if call is None or call.value is None]
    formed: dict[int, StageCall] = {}
    if "answer" in code:
        given = [i for i in loop if labelled[i].answer is not None]
        calls = await run_stage(CodeSection(stage="answer", source=code["answer"]),
                                [{"text": labelled[i].answer} for i in given], [tasks[i] for i in given])
        formed = dict(zip(given, calls))
    return list(await asyncio.gather(*(scored(item, solved[i], formed.get(i))
                                       for i, item in enumerate(labelled))))


async def scored(item: Labelled, solved: StageCall | None, formed: StageCall | None) -> Scored:
    if solved is not None and solved.value is not None and solved.value.strip():
        answer = solved.value.strip()
        return Scored(answer=answer, reward=await score(item.task, answer), by_code=True)
    error = solved.error if solved is not None else None
    if formed is not None and formed.value and formed.value.strip() != item.answer:
        answer = formed.value.strip()
        return Scored(answer=answer, reward=await score(item.task, answer), by_code=True, error=error)
    error = error or (formed.error if formed is not None else None)
    return Scored(answer=item.answer, reward=item.reward, by_code=False, error=error)
