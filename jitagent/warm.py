"""Ahead of time: warm a bank with the seeds' measured outcomes on a suite's `learn` split, so a new
deployment's router starts from evidence instead of descriptions.

Resumable: a (harness, task) pair that already has an outcome in the bank is not run again. A run
cut off by the per-task budget is a genuine 0 (as in `jitagent bench`); any other infrastructure
failure records nothing and is retried by the next call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from harness_bank import HarnessBank
from jitagent.pipeline import record_verified
from jitagent.runtime.agent import Runtime
from jitagent.runtime.events import RunResult
from jitagent.spec import HarnessSpec
from jitagent.tasks import Task


@dataclass
class WarmUnit:
    """One (seed, task) run, reported as it finishes (progress bars, ledgers)."""

    name: str
    spec: HarnessSpec
    task: Task
    run: RunResult
    budget_exhausted: bool
    recorded: bool


async def warm_bank(bank: HarnessBank, runtime: Runtime, specs: dict[str, HarnessSpec], tasks: list[Task], *,
                    seed: int = 0, budget_s: float | None = None) -> AsyncIterator[WarmUnit]:
    """Run every spec on every task that has no outcome yet, recording each verified run."""
    for name, spec in specs.items():
        await asyncio.to_thread(bank.add_harness, spec.model_dump(mode="json"))
        for task in tasks:
            if task.verifier.kind == "none" or await asyncio.to_thread(bank.has_outcome, spec.id, task.id):
                continue
            deadline = None if budget_s is None else time.monotonic() + budget_s
            run = await runtime.run(spec, task, seed=seed, deadline=deadline)
            exhausted = run.interrupted and deadline is not None and time.monotonic() >= deadline
            recorded = run.error is None or exhausted
            if recorded:
                await asyncio.to_thread(record_verified, bank, task, spec, run)
            yield WarmUnit(name, spec, task, run, exhausted, recorded)


def rank_seeds(bank: HarnessBank, specs: dict[str, HarnessSpec], task_ids: list[str]) -> list[str]:
    """Seed names, best first on these tasks: higher mean reward, then fewer tokens (unknown last)."""
    def key(name: str) -> tuple[float, float]:
        n, reward, tokens = bank.outcome_summary(specs[name].id, task_ids)
        return -(reward or 0.0), float("inf") if tokens is None else tokens
    return sorted(specs, key=key)
