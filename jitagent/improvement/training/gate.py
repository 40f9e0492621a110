"""Ahead of time, an adapter earns its place before its harness variants join the clusters' arms: on a suite's
`score` tasks (never trained on, never `final`), each task's cluster's best arm runs with and without the
adapter, the same seed and budget; the adapter passes when its variants score at least what their parents
do. A passed adapter's variants enter their clusters' arms with their gate runs as evidence — their reward
and cost only: no turns, answer, trace or labelled task, so no `score` task is ever shown as an example,
exported for training, corrected or written code for. A failed adapter stays in the bank, marked, and no
variant of it becomes an arm.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field, replace

from harness_bank import HarnessBank
from harness_bank.adapters import AdapterRecord
from harness_bank.router import Router, RouterConfig
from jitagent.common.usage import known_sum
from jitagent.harness.seeds import offered, spec_reader
from jitagent.harness.spec import HarnessSpec
from jitagent.improvement.adapters import adapter_variant, solver_for
from jitagent.improvement.recording import outcome_of
from jitagent.runtime.agent import Runtime
from jitagent.tasks.task import Task, refuse_final


@dataclass
class GateUnit:
    task_id: str
    cluster: str
    parent: str
    variant: str
    parent_reward: float
    variant_reward: float
    tokens: tuple[int | None, int | None]  # the parent's run's and the variant's (None: unknown)


@dataclass
class Gate:
    units: list[GateUnit] = field(default_factory=list)
    skipped: int = 0  # tasks whose cluster has no arm yet (a bank not warmed there)
    wall_s: float = 0.0

    @property
    def parent_mean(self) -> float | None:
        return statistics.fmean(u.parent_reward for u in self.units) if self.units else None

    @property
    def variant_mean(self) -> float | None:
        return statistics.fmean(u.variant_reward for u in self.units) if self.units else None

    @property
    def accepted(self) -> bool:
        return bool(self.units) and self.variant_mean >= self.parent_mean

    def verdict(self) -> dict:
        return {"accepted": self.accepted, "tasks": len(self.units), "skipped": self.skipped,
                "parent_reward": self.parent_mean, "variant_reward": self.variant_mean,
                "tokens": known_sum(*(t for u in self.units for t in u.tokens)),
                "wall_s": round(self.wall_s, 1)}


def best_arm(bank: HarnessBank, spec_of, task: Task, cluster: str) -> HarnessSpec | None:
    """The cluster's arm with the best posterior mean among those that ran there and may run `task`, without
    an adapter."""
    evidence, base = bank.arm_evidence(task.prompt, cluster, RouterConfig().references)
    ran = [a for a in Router(RouterConfig()).arms(evidence, base) if a.evidence.runs]
    specs = [(a.mean, a.evidence.harness_id) for a in ran]
    for _, harness_id in sorted(specs, reverse=True):
        if (spec := spec_of(harness_id)).adapter is None and offered(spec, task):
            return spec
    return None


async def gate(bank: HarnessBank, runtime: Runtime, adapter: AdapterRecord, tasks: list[Task],
               budget_s: float, gate_state: Gate | None = None) -> AsyncIterator[GateUnit]:
    """Each task's best arm against its variant with `adapter`; the verdict is recorded on the adapter and,
    when it passes, the variants' outcomes in the bank."""
    refuse_final(tasks, "the gate")
    state = gate_state if gate_state is not None else Gate()
    spec_of = spec_reader(bank)
    kept = []
    start = time.monotonic()
    for task in tasks:
        cluster = await asyncio.to_thread(bank.cluster_for, task.prompt, task.type, tuple(task.tags),
                                          adapter.pool)
        parent = await asyncio.to_thread(best_arm, bank, spec_of, task, cluster)
        if parent is None:
            state.skipped += 1
            continue
        variant = adapter_variant(parent, adapter)
        runs = []
        for spec in (parent, variant):
            solver = await asyncio.to_thread(solver_for, bank, runtime.solver, spec)
            runs.append(await runtime.run(spec, task, deadline=time.monotonic() + budget_s, solver=solver))
        unit = GateUnit(task.id, cluster, parent.name, variant.name, runs[0].reward or 0.0,
                        runs[1].reward or 0.0, (runs[0].cost.tokens, runs[1].cost.tokens))
        state.units.append(unit)
        kept.append((task, variant, runs[1], cluster))
        yield unit
    state.wall_s = time.monotonic() - start
    await asyncio.to_thread(bank.set_adapter_gate, adapter.id, state.verdict() | {
        "units": [asdict(u) for u in state.units]})
    if state.accepted:
        for task, variant, run, cluster in kept:
            if run.error is None or run.interrupted:  # out of the budget is a genuine 0
                await asyncio.to_thread(bank.add_harness, variant.model_dump(mode="json"))
                evidence = replace(outcome_of(task, variant, run, cluster), answer=None, trace="",
                                   solution=None)
                await asyncio.to_thread(bank.record_outcome, evidence)
