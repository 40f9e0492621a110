"""Ahead of time: evolve a warmed bank, GEPA-style — explore → mutate → accept on a minibatch.

Per round and per task cluster of the `learn` split: take the cluster's best arm (posterior mean),
show the meta-model its recent failures, write one variant (a reflective mutation), run it on a
minibatch of learn tasks its parent already ran, and keep it only if it beats the parent there and
does not regress on the cluster's `score` tasks (both run; score outcomes never enter the bank).
A kept variant's learn outcomes go into the bank, so the router can pull it; a rejected one stays
a candidate with its evidence. `final` is never read. Resumable: each (round, cluster) step is
appended to a JSONL state file beside the bank and skipped on the next call.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time
from collections import defaultdict
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from harness_bank import HarnessBank
from harness_bank.router import Router
from jitagent.pipeline import JitPipeline, outcome_of
from jitagent.runtime.events import RunResult
from jitagent.spec import HarnessSpec
from jitagent.tasks import Task
from jitagent.usage import known_sum


@dataclass
class EvolveStep:
    round: int
    cluster: str
    parent: str = ""
    variant: str | None = None
    minibatch: list[str] = field(default_factory=list)
    parent_reward: float | None = None   # on the minibatch
    variant_reward: float | None = None
    gate_parent: float | None = None     # on the cluster's score tasks (never stored in the bank)
    gate_variant: float | None = None
    accepted: bool = False
    reason: str = ""
    synthesis_tokens: int | None = 0
    execution_tokens: int | None = 0
    wall_s: float = 0.0


class Evolver:
    def __init__(self, pipeline: JitPipeline, state: Path, minibatch: int = 3, budget_s: float | None = None):
        self.pipeline = pipeline
        self.bank: HarnessBank = pipeline.bank
        self.router = Router(pipeline.config.router)
        self.state = state
        self.minibatch = minibatch
        self.budget_s = budget_s

    def done(self) -> set[tuple[int, str]]:
        if not self.state.exists():
            return set()
        return {(s["round"], s["cluster"]) for s in map(json.loads, self.state.read_text().splitlines())}

    async def run(self, learn: list[Task], score: list[Task], rounds: int) -> AsyncIterator[EvolveStep]:
        clusters = await asyncio.to_thread(self._clusters, learn, score)
        done = self.done()
        for number in range(rounds):
            for cluster, (learn_tasks, score_tasks) in clusters.items():
                if (number, cluster) in done:
                    continue
                step = await self._step(number, cluster, learn_tasks, score_tasks)
                if step.variant is not None:  # a step that found nothing to do is tried again next time
                    with self.state.open("a") as f:
                        f.write(json.dumps(asdict(step)) + "\n")
                yield step

    def _clusters(self, learn: list[Task], score: list[Task]) -> dict[str, tuple[list[Task], list[Task]]]:
        grouped: dict[str, tuple[list[Task], list[Task]]] = defaultdict(lambda: ([], []))
        for split, tasks in ((0, learn), (1, score)):
            for task in tasks:
                grouped[self.bank.cluster_for(task.prompt, task.type, tuple(task.tags))][split].append(task)
        return {c: pair for c, pair in grouped.items() if pair[0]}

    async def _step(self, number: int, cluster: str, learn: list[Task], score: list[Task]) -> EvolveStep:
        start = time.monotonic()
        step = EvolveStep(number, cluster)
        evidence, base = await asyncio.to_thread(self.bank.arm_evidence, learn[0].prompt, cluster,
                                                 self.pipeline.config.router.references)
        ran = [a for a in self.router.arms(evidence, base) if a.evidence.runs]
        if not ran:
            step.reason = "no harness has run in this cluster: warm the bank first"
            return step
        best = max(ran, key=lambda a: (a.mean, a.evidence.harness_id))
        parent = self.pipeline.spec_of(best.evidence.harness_id)
        step.parent = parent.name
        failures = await asyncio.to_thread(self.bank.failures, cluster, parent.id,
                                           self.pipeline.config.failures)
        shown = {f["task_text"] for f in failures}
        # the minibatch never holds a task whose verdict the meta-model saw: that would reward memorising
        fresh = [t for t in learn if t.prompt not in shown]
        if not failures or not fresh:
            step.reason = "its best harness has no failure to learn from" if fresh else "no unseen learn task"
            return step
        rng = random.Random(f"{number}:{cluster}")
        batch = rng.sample(fresh, min(self.minibatch, len(fresh)))
        step.minibatch = [t.id for t in batch]
        target = next(t for t in learn if t.prompt in shown)
        synthesis = await self.pipeline.synthesizer.synthesize(target, [parent], {parent.id: best.mean},
                                                               seed=number, n=1, failures=failures,
                                                               clean_parents=frozenset({parent.id}))
        step.synthesis_tokens = known_sum(synthesis.cost.synthesis.tokens, synthesis.cost.repair.tokens)
        if synthesis.chosen is None:
            step.reason, step.wall_s = f"no valid variant: {synthesis.reason}", time.monotonic() - start
            return step
        variant = synthesis.chosen.derive(origin="evolved", parent_id=parent.id,
                                          generator=self.pipeline.meta.name)
        step.variant = variant.name
        runs = [await self._run(variant, t, number, step) for t in batch]
        step.variant_reward = statistics.fmean(r.reward for r in runs)  # parent and variant, same seed
        step.parent_reward = statistics.fmean([(await self._run(parent, t, number, step)).reward
                                               for t in batch])
        if step.variant_reward <= step.parent_reward:
            step.reason = (f"not better on the minibatch: {step.variant_reward:.2f} "
                           f"vs {step.parent_reward:.2f}")
        elif score:
            step.gate_variant = statistics.fmean([(await self._run(variant, t, number, step)).reward
                                                  for t in score])
            step.gate_parent = statistics.fmean([(await self._run(parent, t, number, step)).reward
                                                 for t in score])
            step.accepted = step.gate_variant >= step.gate_parent
            step.reason = (f"minibatch {step.variant_reward:.2f} vs {step.parent_reward:.2f}; score "
                           f"{step.gate_variant:.2f} vs {step.gate_parent:.2f}"
                           + ("" if step.accepted else ": regresses on score"))
        else:
            step.accepted = True
            step.reason = f"minibatch {step.variant_reward:.2f} vs {step.parent_reward:.2f}"
        await asyncio.to_thread(self._keep, variant, batch, runs, cluster, step)
        step.wall_s = time.monotonic() - start
        return step

    async def _run(self, spec: HarnessSpec, task: Task, seed: int, step: EvolveStep) -> RunResult:
        deadline = None if self.budget_s is None else time.monotonic() + self.budget_s
        run = await self.pipeline.runtime.run(spec, task, seed=seed, deadline=deadline)
        step.execution_tokens = known_sum(step.execution_tokens, run.cost.tokens)
        return run

    def _keep(self, variant: HarnessSpec, batch: list[Task], runs: list[RunResult], cluster: str,
              step: EvolveStep) -> None:
        """Every variant stays a candidate with its evidence; a kept one's learn outcomes enter the bank."""
        self.bank.record_candidate(batch[0].id, batch[0].prompt, {
            "spec": variant.model_dump(mode="json"), "valid": True, "origin": "evolved",
            "parent_id": variant.envelope.parent_id, "history": [asdict(step)]}, self.pipeline.meta.name)
        if step.accepted:
            for task, run in zip(batch, runs):
                if run.error is None and not self.bank.has_outcome(variant.id, task.id):
                    self.bank.record_outcome(outcome_of(task, variant, run, cluster))
