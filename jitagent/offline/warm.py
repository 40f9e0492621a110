"""Ahead of time: warm a bank with the seeds' measured outcomes on a suite's `learn` split, so a new
deployment's router starts from evidence instead of descriptions.

A harness that shows examples (`prompts.examples`) is shown the verified solutions of the other warm-up
tasks of its cluster, as in a stream; `with_examples_variants` adds such a variant of each seed, run after
the seeds so that their solutions are there to show. Only `learn` is warmed on: a `final` task is refused,
so the held-out split is never a source of evidence or of examples ahead of time.

Resumable: a (harness, task) pair that already has an outcome in the bank is not run again, unless
`redo`, when the new outcome replaces the pair's earlier ones. What failed for a reason of the caller's
(a run cut off by the caller's budget, which `bank warm` takes from its command line) or of the
infrastructure records nothing and is run again by the next call: only what a harness did within its
own limits is evidence. A benchmark, whose budget is part of its protocol for every arm, scores running
out of it as a genuine 0 (`out_of_budget_scores_zero`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from harness_bank import HarnessBank
from jitagent.harness.seeds import spec_reader
from jitagent.harness.spec import ExamplesSpec, HarnessSpec
from jitagent.improvement.adapters import solver_for
from jitagent.improvement.examples import examples_for, with_examples
from jitagent.improvement.recording import record_verified
from jitagent.runtime.agent import Runtime
from jitagent.runtime.events import RunResult
from jitagent.tasks.task import Task, refuse_final


@dataclass
class WarmUnit:
    """One (seed, task) run, reported as it finishes (progress bars, ledgers)."""

    name: str
    spec: HarnessSpec
    task: Task
    run: RunResult
    budget_exhausted: bool
    recorded: bool

    @property
    def why_not_recorded(self) -> str:
        if self.recorded:
            return ""
        return "out of the budget (--budget-s)" if self.budget_exhausted else str(self.run.error)


async def warm_bank(bank: HarnessBank, runtime: Runtime, specs: dict[str, HarnessSpec], tasks: list[Task], *,
                    seed: int = 0, budget_s: float | None = None, redo: bool = False,
                    out_of_budget_scores_zero: bool = False) -> AsyncIterator[WarmUnit]:
    """Run every spec on every verified task that has no outcome yet (with `redo`, on every one),
    recording each run the harness finished within its own limits."""
    if budget_s is not None and budget_s <= 0:
        raise ValueError(f"budget_s: must be more than 0, got {budget_s:g}")
    refuse_final(tasks, "the warm-up")
    spec_of = spec_reader(bank)
    for name, spec in specs.items():
        await asyncio.to_thread(bank.add_harness, spec.model_dump(mode="json"))
        for task in tasks:
            if task.verifier.kind == "none" or (
                    not redo and await asyncio.to_thread(bank.has_outcome, spec.id, task.id)):
                continue
            cluster = await asyncio.to_thread(bank.cluster_for, task.prompt, task.type, tuple(task.tags))
            shown = await asyncio.to_thread(examples_for, bank, spec_of, spec, task, cluster)
            deadline = None if budget_s is None else time.monotonic() + budget_s
            solver = await asyncio.to_thread(solver_for, bank, runtime.solver, spec)
            run = await runtime.run(spec, task, seed=seed, deadline=deadline, examples=shown.messages,
                                    solver=solver)
            exhausted = run.interrupted and deadline is not None and time.monotonic() >= deadline
            recorded = run.error is None or (exhausted and out_of_budget_scores_zero)
            if recorded:
                if redo:
                    await asyncio.to_thread(bank.forget_outcomes, spec.id, task.id)
                await asyncio.to_thread(record_verified, bank, task, spec, run, cluster)
            yield WarmUnit(name, spec, task, run, exhausted, recorded)


def with_examples_variants(specs: dict[str, HarnessSpec],
                           settings: ExamplesSpec | None = None) -> dict[str, HarnessSpec]:
    """`specs`, then the variant with examples of each that can show some (one conversation a run, none shown
    yet): warmed after them, it enters every cluster's arms with evidence of its own."""
    variants = [with_examples(spec, settings) for spec in specs.values()
                if spec.solution_format is not None and spec.prompts.examples is None]
    return specs | {v.name: v for v in variants}


def rank_seeds(bank: HarnessBank, specs: dict[str, HarnessSpec], task_ids: list[str]) -> list[str]:
    """Seed names, best first on these tasks: higher mean reward, then fewer tokens (unknown last)."""
    def key(name: str) -> tuple[float, float]:
        n, reward, tokens = bank.outcome_summary(specs[name].id, task_ids)
        return -(reward or 0.0), float("inf") if tokens is None else tokens
    return sorted(specs, key=key)
