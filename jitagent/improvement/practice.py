"""Self-generated data: where a client's report says a task failed and hands the check it scored the answer
with, the server tries the task again in the background — its cluster's other arms, best first, until one
passes the check — and keeps only what passed, among the cluster's solutions: its later tasks' examples
and the adapter's training data (harness_bank.practice). Never to answer the task again: its answer was
given and counted. Every try is kept with its cost, passed or not.

Off by default (`tries` 0): a try takes the cores as a served run does, and on a server a place to work
among its `concurrency` (the report's `slot`). One job at a time; failed tasks reported meanwhile wait in a
short queue (the oldest dropped beyond it).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass

from pydantic import BaseModel, Field

from harness_bank import HarnessBank
from harness_bank.practice import PracticeTry
from jitagent.common.errors import one_line
from jitagent.harness.spec import HarnessSpec
from jitagent.runtime.events import RunResult
from jitagent.tasks.task import Task, VerifierSpec

log = logging.getLogger(__name__)

# a spec run on a task in a cluster, with a seed, by a deadline (time.monotonic())
Execute = Callable[[HarnessSpec, Task, str, int, float], Awaitable[RunResult]]
Ranked = Callable[[Task, str], list[str]]  # a cluster's arms for a task, best first (harness ids)
Slot = Callable[[], AbstractAsyncContextManager]  # a place to work, as a served run takes one


class PracticeConfig(BaseModel):
    tries: int = Field(0, ge=0, le=8, description="arms of its cluster tried again, best first, on a task "
                       "whose client reported it failed and handed its check (0: never)")
    keep: float = Field(1.0, gt=0, le=1, description="a try that earns at least this is kept as a solution "
                        "(and a report below it is a failure to practise)")
    budget_s: float = Field(30.0, gt=0, le=86_400, description="each try's deadline, in seconds")
    queue: int = Field(64, ge=1, le=10_000, description="failed tasks waiting for practice at most")
    give_up: int = Field(12, ge=1, le=10_000, description="a cluster whose this many tries kept nothing is "
                         "practised no more: what its arms cannot solve, trying again only spends tokens")


@dataclass(frozen=True)
class Failed:
    """A task to practise: the served run it failed in, where, the task with the client's check, and where
each try takes its place to work (None: anywhere)."""

    run_id: str
    cluster: str
    harness_id: str
    task: Task
    slot: Slot | None = None


class Practice:
    def __init__(self, bank: HarnessBank, spec_of: Callable[[str], HarnessSpec], ranked: Ranked,
                 execute: Execute, config: PracticeConfig, on_kept: Callable[[], None] = lambda: None):
        self.bank, self.spec_of, self.ranked, self.execute = bank, spec_of, ranked, execute
        self.config, self.on_kept = config, on_kept
        self.pending: deque[Failed] = deque(maxlen=config.queue)
        self.job: asyncio.Task | None = None

    def wants(self, reward: float, check: VerifierSpec | None, trusted: frozenset[str] | None) -> bool:
        """Whether a report of `reward` with `check` is a failure to practise: practice is on, the check
        can judge a try (of a kind the caller's pool takes as proof, where it names any), and the reward
        is below the bar a try must reach to be kept."""
        return (bool(self.config.tries) and check is not None and check.kind != "none"
                and (trusted is None or check.kind in trusted) and reward < self.config.keep)

    def start(self, failed: Failed) -> None:
        self.pending.append(failed)
        if self.job is None or self.job.done():
            self.job = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        while self.pending:
            failed = self.pending.popleft()
            try:
                await self.practise(failed)
            except Exception as error:  # one task's practice breaking must not stop the next
                log.error("practice on run %s failed: %s", failed.run_id, one_line(error))

    async def practise(self, failed: Failed) -> list[PracticeTry]:
        """Try the cluster's best arms other than the one that failed, one after another, until one passes;
        every try recorded. None in a cluster whose tries have kept nothing `give_up` times."""
        done = await asyncio.to_thread(self.bank.practice_tally, None, failed.cluster)
        if done.kept == 0 and done.tries >= self.config.give_up:
            return []
        ranked = await asyncio.to_thread(self.ranked, failed.task, failed.cluster)
        tried: list[PracticeTry] = []
        for seed, harness_id in enumerate([h for h in ranked if h != failed.harness_id][:self.config.tries]):
            spec = self.spec_of(harness_id)
            async with failed.slot() if failed.slot else nullcontext():
                start = time.monotonic()
                deadline = start + self.config.budget_s
                run = await self.execute(spec, failed.task, failed.cluster, seed, deadline)
                attempt = self._attempt(failed, spec, run, time.monotonic() - start)
            await asyncio.to_thread(self.bank.record_practice, attempt)
            tried.append(attempt)
            if attempt.solution is not None:
                self.on_kept()
            if passed(run, self.config.keep):  # a pass that left no turns to keep ends it too
                break
        return tried

    def _attempt(self, failed: Failed, spec: HarnessSpec, run: RunResult, wall_s: float) -> PracticeTry:
        """A try as the bank keeps it: its turns only where the check passed it at the bar."""
        task = failed.task
        return PracticeTry(run_id=failed.run_id, harness_id=spec.id, cluster=failed.cluster, task_id=task.id,
                           task_text=task.prompt, reward=run.reward, verdict=run.verdict,
                           solution=run.solution if passed(run, self.config.keep) else None,
                           prompt_tokens=run.cost.prompt_tokens,
                           completion_tokens=run.cost.completion_tokens, wall_s=wall_s,
                           evidence=f"practice:{task.verifier.kind}")

    async def settle(self) -> None:
        """Wait until nothing is practised or waiting (tests, a stream that must see what was kept)."""
        while self.job is not None and not self.job.done():
            await self.job

    def stop(self) -> None:
        """Drop what waits and cancel the try in progress (a server shutting down)."""
        self.pending.clear()
        if self.job is not None:
            self.job.cancel()


def passed(run: RunResult, keep: float) -> bool:
    """Whether a try passed the check at the bar: a pass ends the task's practice, kept or not."""
    return run.error is None and run.reward is not None and run.reward >= keep
