"""Ahead of time: evolve a warmed bank, GEPA-style — explore → mutate → accept on a minibatch — and write
code for its clusters (`tools`).

Per round and per task cluster of the `learn` split: take the cluster's best arm (posterior mean),
show the meta-model its recent failures, write one variant (a reflective mutation), run it on a
minibatch of learn tasks its parent already ran, and keep it only if it beats the parent there and
does not regress on the cluster's `score` tasks (both run; score outcomes never enter the bank).
A kept variant's learn outcomes go into the bank, so the router can pull it; a rejected one stays
a candidate with its evidence. `final` is never read. Resumable: each (round, cluster) step is
appended to a JSONL state file beside the bank and skipped on the next call.

`tools`: per cluster, the best arm runs on the cluster's `learn` tasks it has not run (they become its
labelled tasks), a writer model writes code for the cluster from some of them, a harness carrying it
is accepted on the others (jitagent.improvement.toolshop) and then must not regress on the cluster's `score`
tasks. What passes both joins the bank with its trial outcomes; every attempt is recorded.
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
from harness_bank.router import Arm, Router
from jitagent.common.usage import known_sum
from jitagent.harness.seeds import offered
from jitagent.harness.spec import HarnessSpec
from jitagent.improvement.adapters import solver_for
from jitagent.improvement.recording import record_verified
from jitagent.improvement.toolmaking import Toolmaking
from jitagent.runtime.events import RunResult
from jitagent.solving.pipeline import JitPipeline
from jitagent.tasks.task import Task, refuse_final

NOT_WARMED = "no harness has run in this cluster: warm the bank first"


@dataclass
class ToolStep:
    """One stage of code written for one cluster ahead of time: accepted on held-out learn tasks, then
    gated on score; its writer's tokens and the runs it took (labelling learn tasks, the gate)."""

    cluster: str
    stage: str = ""
    parent: str = ""
    harness: str | None = None  # the harness accepted on held-out tasks, before the gate
    accepted: bool = False  # accepted, and no regression on score: it joined the bank
    reason: str = ""
    heldout_parent: float | None = None
    heldout_harness: float | None = None
    gate_parent: float | None = None
    gate_harness: float | None = None
    writer_prompt_tokens: int | None = 0
    writer_completion_tokens: int | None = 0
    execution_tokens: int | None = 0
    wall_s: float = 0.0
    kind: str = "tools"


@dataclass
class EvolveStep:
    """One reflective mutation of one cluster's best arm, accepted on a minibatch and gated on score."""

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
    kind: str = "mutation"


class Evolver:
    def __init__(self, pipeline: JitPipeline, state: Path, minibatch: int = 3, budget_s: float | None = None):
        self.pipeline = pipeline
        self.bank: HarnessBank = pipeline.bank
        self.router = Router(pipeline.config.router)
        self.state = state
        self.minibatch = minibatch
        self.budget_s = budget_s

    def done(self) -> set[tuple[int, str]]:
        return {(s["round"], s["cluster"]) for s in self._states() if s.get("kind") != "tools"}

    def _states(self) -> list[dict]:
        if not self.state.exists():
            return []
        return [json.loads(line) for line in self.state.read_text().splitlines()]

    def _save(self, step: EvolveStep | ToolStep) -> None:
        with self.state.open("a") as f:
            f.write(json.dumps(asdict(step)) + "\n")

    async def run(self, learn: list[Task], score: list[Task], rounds: int) -> AsyncIterator[EvolveStep]:
        clusters = await asyncio.to_thread(self._clusters, learn, score)
        done = self.done()
        for number in range(rounds):
            for cluster, (learn_tasks, score_tasks) in clusters.items():
                if (number, cluster) in done:
                    continue
                step = await self._step(number, cluster, learn_tasks, score_tasks)
                if step.variant is not None:  # a step that found nothing to do is tried again next time
                    self._save(step)
                yield step

    async def tools(self, learn: list[Task], score: list[Task], seed: int = 0) -> AsyncIterator[ToolStep]:
        """Code for each cluster of `learn` (its best arm as the parent), once per cluster: resumable."""
        clusters = await asyncio.to_thread(self._clusters, learn, score)
        done = {s["cluster"] for s in self._states() if s.get("kind") == "tools"}
        for cluster, (learn_tasks, score_tasks) in clusters.items():
            if cluster not in done:
                async for step in self._tools_for(cluster, learn_tasks, score_tasks, seed):
                    if step.reason != NOT_WARMED:  # tried again once the bank is warm
                        self._save(step)
                    yield step

    async def _tools_for(self, cluster: str, learn: list[Task], score: list[Task],
                         seed: int) -> AsyncIterator[ToolStep]:
        start, labelling = time.monotonic(), ToolStep(cluster)
        if (best := await self._best(cluster, learn)) is None:
            labelling.reason = NOT_WARMED
            yield labelling
            return
        parent, shop = self.pipeline.spec_of(best.evidence.harness_id), self.pipeline.toolshop
        await self._label(parent, cluster, learn, seed, labelling)
        labelled = await asyncio.to_thread(shop.labelled, cluster, parent)
        labelling.wall_s = time.monotonic() - start
        for number, made in enumerate(await shop.make(cluster, parent, labelled, seed)):
            step = await self._judged(made, score, seed)
            if number == 0:  # the labelling runs are counted with the first stage
                step.execution_tokens = known_sum(step.execution_tokens, labelling.execution_tokens)
                step.wall_s += labelling.wall_s
            await asyncio.to_thread(shop.keep, made, labelled, adopt=step.accepted)
            yield step

    async def _label(self, parent: HarnessSpec, cluster: str, learn: list[Task], seed: int,
                     step: ToolStep) -> None:
        """The parent's outcome on every learn task of the cluster: they are what code is tried on."""
        for task in learn:
            if not await asyncio.to_thread(self.bank.has_outcome, parent.id, task.id):
                run = await self._run(parent, task, seed, step)
                if run.error is None or run.interrupted:
                    await asyncio.to_thread(record_verified, self.bank, task, parent, run, cluster)

    async def _judged(self, made: Toolmaking, score: list[Task], seed: int) -> ToolStep:
        """An attempt as a step; one accepted on held-out tasks must not regress on `score` (unless the
        attempt is the unverified ablation's, which skips every check)."""
        step = ToolStep(made.cluster, made.stage, made.parent.name, made.accepted and made.accepted.name,
                        reason=made.reason, heldout_parent=made.parent_mean,
                        writer_prompt_tokens=made.cost.prompt_tokens,
                        writer_completion_tokens=made.cost.completion_tokens,
                        wall_s=made.cost.wall_s + made.trial_s)
        if made.accepted is None:
            return step
        step.heldout_harness = statistics.fmean(s.reward for s in made.evidence) if made.evidence else None
        if self.pipeline.toolshop.config.verify_heldout:
            gate_start = time.monotonic()
            step.gate_harness, step.gate_parent = await self._gate(made.accepted, made.parent, score, seed,
                                                                   step)
            step.wall_s += time.monotonic() - gate_start
        step.accepted = step.gate_harness is None or step.gate_harness >= step.gate_parent
        if step.gate_harness is not None:
            step.reason += (f"; score {step.gate_harness:.2f} vs {step.gate_parent:.2f}"
                            + ("" if step.accepted else ": regresses on score"))
        return step

    def _clusters(self, learn: list[Task], score: list[Task]) -> dict[str, tuple[list[Task], list[Task]]]:
        refuse_final(learn + score, "evolve")
        grouped: dict[str, tuple[list[Task], list[Task]]] = defaultdict(lambda: ([], []))
        for split, tasks in ((0, learn), (1, score)):
            for task in tasks:
                grouped[self.bank.cluster_for(task.prompt, task.type, tuple(task.tags))][split].append(task)
        return {c: pair for c, pair in grouped.items() if pair[0]}

    async def _best(self, cluster: str, learn: list[Task]) -> Arm | None:
        """The cluster's arm with the best posterior mean among those that ran there and may run its tasks."""
        evidence, base = await asyncio.to_thread(self.bank.arm_evidence, learn[0].prompt, cluster,
                                                 self.pipeline.config.router.references)
        ran = [a for a in self.router.arms(evidence, base)
               if a.evidence.runs and offered(self.pipeline.spec_of(a.evidence.harness_id), learn[0])]
        return max(ran, key=lambda a: (a.mean, a.evidence.harness_id), default=None)

    async def _step(self, number: int, cluster: str, learn: list[Task], score: list[Task]) -> EvolveStep:
        start = time.monotonic()
        step = EvolveStep(number, cluster)
        if (best := await self._best(cluster, learn)) is None:
            step.reason = NOT_WARMED
            return step
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
        minibatch = f"minibatch {step.variant_reward:.2f} vs {step.parent_reward:.2f}"
        if step.variant_reward <= step.parent_reward:
            step.reason = f"not better on the {minibatch}"
        else:
            step.gate_variant, step.gate_parent = await self._gate(variant, parent, score, number, step)
            step.accepted = step.gate_variant is None or step.gate_variant >= step.gate_parent
            step.reason = minibatch + ("" if step.gate_variant is None else
                                       f"; score {step.gate_variant:.2f} vs {step.gate_parent:.2f}"
                                       + ("" if step.accepted else ": regresses on score"))
        await asyncio.to_thread(self._keep, variant, batch, runs, cluster, step)
        step.wall_s = time.monotonic() - start
        return step

    async def _gate(self, variant: HarnessSpec, parent: HarnessSpec, score: list[Task], seed: int,
                    step) -> tuple[float | None, float | None]:
        """Both on the cluster's `score` tasks (never stored in the bank): the no-regression gate. None, None
        when the cluster has none."""
        if not score:
            return None, None
        return tuple([statistics.fmean([(await self._run(spec, t, seed, step)).reward for t in score])
                      for spec in (variant, parent)])

    async def _run(self, spec: HarnessSpec, task: Task, seed: int, step) -> RunResult:
        """`spec` on `task` within the budget; its tokens added to the step's execution tokens."""
        deadline = None if self.budget_s is None else time.monotonic() + self.budget_s
        solver = await asyncio.to_thread(solver_for, self.bank, self.pipeline.solver, spec)
        run = await self.pipeline.runtime.run(spec, task, seed=seed, deadline=deadline, solver=solver)
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
                    record_verified(self.bank, task, variant, run, cluster)
