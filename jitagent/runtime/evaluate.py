"""Run one harness over a list of tasks and summarize (used by `jitagent run` and benchmarks)."""

from __future__ import annotations

import statistics
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from jitagent.harness.spec import HarnessSpec
from jitagent.runtime.agent import Runtime
from jitagent.runtime.channel import last_of
from jitagent.runtime.events import RunResult
from jitagent.tasks.task import Task


@dataclass
class Summary:
    harness: str
    n: int
    verified: int  # tasks with a verdict; the rest were unverified and count for nothing
    success_rate: float | None  # mean reward over the verified tasks (None: none was verified)
    mean_tokens: float | None
    mean_wall_s: float
    infra_errors: int

    def to_dict(self) -> dict:
        return self.__dict__.copy()


def summarize(harness: str, results: list[RunResult]) -> Summary:
    tokens = [r.cost.tokens for r in results]
    known = [t for t in tokens if t is not None]
    rewards = [r.reward for r in results if r.reward is not None]
    return Summary(
        harness=harness, n=len(results), verified=len(rewards),
        success_rate=statistics.fmean(rewards) if rewards else None,
        mean_tokens=statistics.fmean(known) if known and len(known) == len(tokens) else None,
        mean_wall_s=statistics.fmean(r.cost.wall_s for r in results) if results else 0.0,
        infra_errors=sum(r.error is not None for r in results))


def why(result: RunResult) -> str:
    """Why a run did not pass, in a line: an infrastructure error, the harness's own stop (its timeout,
    its budget), or the verdict; "" when it passed or nothing verified it."""
    if result.error:
        return f"error: {result.error}"
    if result.stop is not None:
        return result.stop.text
    return "" if result.passed in (True, None) else result.verdict


async def run_tasks(runtime: Runtime, spec: HarnessSpec, tasks: list[Task], seed: int = 0,
                    on_done: Callable[[RunResult], None] | None = None,
                    watch: Callable[[AsyncIterator], AsyncIterator] | None = None) -> list[RunResult]:
    """`on_done` hears each result as it comes (a progress line); `watch` wraps each run's events (a
    heartbeat that says a model call goes on)."""
    results = []
    for task in tasks:
        events = runtime.stream(spec, task, seed=seed)
        results.append(await last_of(watch(events) if watch else events, RunResult))
        if on_done is not None:
            on_done(results[-1])
    return results
