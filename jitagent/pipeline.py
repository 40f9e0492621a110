"""The JIT pipeline, top to bottom: route → (run the chosen harness | synthesize a variant) → execute →
verify → record.

Measured outcomes decide which harness runs: a bandit per task cluster (`harness_bank.router`) picks
among the harnesses that earned reward there and the top references, and spends synthesis only
where it explores — a known cluster costs what its best harness costs. Plain Python usable without
the server. It is the only piece that knows both the bank and the runtime: the bank knows nothing
of models, the runtime nothing of the bank.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import random
import time
import uuid
import zlib
from collections.abc import AsyncIterator

from pydantic import BaseModel, Field

from harness_bank import Decision, HarnessBank, Outcome, RunRecord
from harness_bank.router import ArmSummary, Route, RouteChoice, Router, RouterConfig
from jitagent.adapters import solver_for
from jitagent.catalog import spec_reader
from jitagent.errors import one_line
from jitagent.events import BankDecision, Chosen, Retrieved, Routed, SolveEvent, SolveResult
from jitagent.examples import NOTHING, examples_for
from jitagent.feedback import Recorded, Report, report_harness, report_run
from jitagent.models.base import CancelToken, ModelClient, base_model
from jitagent.retrain import RetrainConfig, Retrainer
from jitagent.runtime.agent import Runtime
from jitagent.runtime.channel import last_of
from jitagent.runtime.events import RunResult
from jitagent.spec import HarnessSpec
from jitagent.synthesis.synthesize import Synthesis, SynthesisConfig, SynthesisCost, Synthesizer
from jitagent.tasks import Task
from jitagent.toolmaking import ToolmakingConfig
from jitagent.toolshop import PlateauConfig, Toolshop
from jitagent.variants import free_variant

log = logging.getLogger(__name__)


class PipelineConfig(BaseModel):
    router: RouterConfig = Field(default_factory=RouterConfig)
    learn: bool = Field(True, description="record outcomes in the bank (streaming JIT); False: static")
    keep_candidates: bool = Field(True,
                                  description="store every candidate in the bank (lineage, training data)")
    mutation_n: int = Field(1, ge=1, le=8, description="candidates of a reflective mutation: the bandit, not "
                                                          "the meta-model's taste, chooses among variants")
    failures: int = Field(3, ge=0, le=5, description="recent failures of the parent shown to a mutation")
    synthesis: SynthesisConfig = Field(default_factory=SynthesisConfig)
    online_tools: bool = Field(True, description="in a plateaued cluster the router's synthesis draw asks "
                               "for code written for the cluster (between tasks), not for a prompt edit")
    toolmaking: ToolmakingConfig = Field(default_factory=ToolmakingConfig)
    plateau: PlateauConfig = Field(default_factory=PlateauConfig)
    retrain: RetrainConfig = Field(default_factory=RetrainConfig)


def verified(run: RunResult | None, task: Task, cancel: CancelToken) -> bool:
    """Whether the run's outcome is evidence for its harness: it ran, the task has a verifier, and no
    infrastructure failed — but running out of the caller's time budget is a genuine 0 (a harness too
    slow for it must lose share). An unverified run waits for a report."""
    if run is None or task.verifier.kind == "none":
        return False
    out_of_time = run.interrupted and cancel.deadline is not None and time.monotonic() >= cancel.deadline
    return run.error is None or out_of_time


class JitPipeline:
    """Route, synthesize where the router explores, execute, verify and record, one task at a time
    (`stream` yields what happens as it happens, `solve` only the result). With `learn`, every run is
    recorded in the bank under its run id (`report_outcome` names it) and a verified run's outcome is
    admitted as evidence."""

    def __init__(self, bank: HarnessBank, meta: ModelClient, solver: ModelClient,
                 config: PipelineConfig | None = None, writer: ModelClient | None = None):
        """`writer`: the model that writes code for clusters (default: the meta-model)."""
        self.bank = bank
        self.meta = meta
        self.solver = solver
        self.config = config or PipelineConfig()
        self.router = Router(self.config.router)
        self.runtime = Runtime(solver)
        self.synthesizer = Synthesizer(meta, self.runtime, self.config.synthesis,
                                       functools.partial(solver_for, bank, solver))
        self.toolshop = Toolshop(bank, writer or meta, self.config.toolmaking, self.config.plateau)
        self.spec_of = spec_reader(bank)
        self.retrainer = Retrainer(bank, base_model(solver), self.config.retrain)
        self._tooling: dict[str, asyncio.Task] = {}  # the clusters code is being written for

    async def stream(self, task: Task, *, execute: bool = True, seed: int = 0,
                     cancel: CancelToken | None = None, deadline: float | None = None, n: int | None = None,
                     delivery: str | None = None, run_id: str | None = None) -> AsyncIterator[SolveEvent]:
        """`delivery`: the queue delivery the task came from; the bank records its outcome once.
        `run_id`: the id the run is recorded under (default: a new one), in the result."""
        start = time.monotonic()
        run_id = run_id or uuid.uuid4().hex
        cancel = (cancel or CancelToken()).tighten(deadline)
        cluster, choice, failures = await asyncio.to_thread(self._route, task, seed)
        if choice.write_code:
            self._write_tools(cluster, choice.arm.evidence.harness_id, seed)
        arms = tuple(a.summary() for a in choice.arms)
        route, spec, synthesis = choice.route, None, None
        if route != "synthesized":
            spec = self.spec_of(choice.arm.evidence.harness_id)
            yield Routed(route=route, cluster=cluster, arms=arms, text=f"{route} {spec.name} in {cluster}: "
                                                                       f"{choice.reason}")
        elif free := await asyncio.to_thread(self._free_variant, choice, task, cluster):
            spec, offers = free
            yield Routed(route=route, cluster=cluster, arms=arms,
                         text=f"synthesized (mutation of {choice.arm.evidence.name}; {choice.reason}): "
                              f"{spec.name}, {offers}")
        else:
            async for item in self._synthesize(task, choice, failures, arms, seed, cancel, n):
                if isinstance(item, Synthesis):
                    synthesis = item
                else:
                    yield item
            spec = synthesis.chosen or self.spec_of(choice.best.evidence.harness_id)
            route = "synthesized" if synthesis.chosen else "fallback"
            kind = "mutation of " + choice.arm.evidence.name if choice.arm else "cold cluster"
            yield Routed(route=route, cluster=cluster, arms=arms,
                         text=f"{route} ({kind}; {choice.reason}): {synthesis.reason}")
        run, shown = None, ()
        async for event in self._run(spec, task, cluster, execute, seed, cancel, deadline):
            if isinstance(event, RunResult):
                run = event
                continue
            if isinstance(event, Chosen):
                shown = event.examples
            yield event
        admitted = None
        if self.config.learn and (admitted := await self._learn(run_id, task, route, spec, run, cluster,
                                                                 delivery, cancel)):
            yield admitted
        yield SolveResult(task_id=task.id, route=route, harness=spec, cluster=cluster, synthesis=synthesis,
                          run=run, references=list(arms),
                          synthesis_cost=synthesis.cost if synthesis else SynthesisCost(),
                          wall_s=time.monotonic() - start, bank_decision=admitted.text if admitted else "",
                          run_id=run_id, examples=shown)

    async def _run(self, spec: HarnessSpec, task: Task, cluster: str, execute: bool, seed: int,
                   cancel: CancelToken, deadline: float | None) -> AsyncIterator[SolveEvent | RunResult]:
        """The examples the harness is shown (`Chosen`), then its run's events and its `RunResult` (none
        where it does not execute): the solver with the harness's adapter, where it names one."""
        shown = await asyncio.to_thread(examples_for, self.bank, self.spec_of, spec, task, cluster) \
            if execute else NOTHING
        yield Chosen(harness=spec, examples=shown.sources)
        if execute:
            solver = await asyncio.to_thread(solver_for, self.bank, self.solver, spec)
            async for event in self.runtime.stream(spec, task, seed=seed, cancel=cancel, deadline=deadline,
                                                   examples=shown.messages, solver=solver):
                yield event

    async def _learn(self, run_id: str, task: Task, route: Route, spec: HarnessSpec, run: RunResult | None,
                     cluster: str, delivery: str | None, cancel: CancelToken) -> BankDecision | None:
        """The run recorded, and where it was verified its outcome admitted (one more verified run for the
        retrainer); the bank's decision, or None."""
        decision = await asyncio.to_thread(self._record, run_id, task, route, spec, run, cluster, delivery,
                                           verified(run, task, cancel))
        if decision is None:
            return None
        self.retrainer.verified()
        return BankDecision(cluster=cluster, promoted=decision.promote, reason=decision.reason)

    async def _synthesize(self, task: Task, choice: RouteChoice, failures: list[dict],
                          arms: tuple[ArmSummary, ...], seed: int, cancel: CancelToken,
                          n: int | None) -> AsyncIterator[SolveEvent | Synthesis]:
        """Write a variant where the router explores by synthesis: a reflective mutation of the cluster's
        best arm from its recent failures, or in a cold cluster a harness from the best references. The
        synthesis's events, then the `Synthesis` (its candidates kept in the bank)."""
        mutation = choice.arm is not None
        parents = [choice.arm] if mutation else sorted(choice.arms,
                                                       key=lambda a: (-a.mean, -a.evidence.similarity))
        yield Retrieved(text=", ".join(f"{a.evidence.name} ({a.mean:.2f})" for a in parents), arms=arms)
        specs = [self.spec_of(a.evidence.harness_id) for a in parents]
        synthesis = None
        async for item in self.synthesizer.stream(
                task, specs, {a.evidence.harness_id: a.mean for a in parents}, seed, cancel,
                self.config.mutation_n if mutation else n, failures=failures if mutation else None,
                clean_parents=frozenset(a.evidence.harness_id for a in choice.arms if a.evidence.runs)):
            if isinstance(item, Synthesis):
                synthesis = item
            else:
                yield item
        if self.config.keep_candidates:
            await asyncio.to_thread(self._keep_candidates, task, synthesis)
        yield synthesis

    def _free_variant(self, choice: RouteChoice, task: Task,
                      cluster: str) -> tuple[HarnessSpec, str] | None:
        """A mutation of the arm that costs no meta-model call (variants.py), where it has one to offer."""
        if choice.arm is None:  # a cold cluster: nothing to mutate
            return None
        taken = {a.evidence.harness_id for a in choice.arms} | self.bank.retired(cluster)
        parent = self.spec_of(choice.arm.evidence.harness_id)
        return free_variant(self.bank, self.spec_of, parent, taken, task, cluster, base_model(self.solver))

    async def solve(self, task: Task, **kw) -> SolveResult:
        return await last_of(self.stream(task, **kw), SolveResult)

    async def report_outcome(self, report: Report, *, run_id: str = "", harness_id: str = "",
                             task_text: str = "", task_id: str = "", task_type: str | None = None,
                             tags: tuple[str, ...] = ()) -> Recorded:
        """An outcome someone reports (jitagent.feedback): of the run recorded under `run_id`, else of
        `harness_id` run elsewhere on the task `task_text` describes. The bank's admission decides."""
        if run_id:
            return await asyncio.to_thread(report_run, self.bank, run_id, report)
        return await asyncio.to_thread(report_harness, self.bank, harness_id, task_text, report,
                                       task_id=task_id, task_type=task_type, tags=tags)

    def _route(self, task: Task, seed: int) -> tuple[str, RouteChoice, list[dict]]:
        """The task's cluster, the router's choice and, for a mutation, its parent's recent failures. One
        thread hop for all the bank reads; the draw is seeded by (seed, task), so a run repeats."""
        cluster = self.bank.cluster_for(task.prompt, task.type, tuple(task.tags))
        evidence, base = self.bank.arm_evidence(task.prompt, cluster, self.config.router.references)
        rng = random.Random(zlib.crc32(f"{seed}:{task.id}:{task.prompt}".encode()))
        code_due = functools.partial(self.toolshop.due, cluster) if self.config.online_tools else None
        choice = self.router.choose(evidence, base, rng, seen=self.bank.tasks_seen(cluster),
                                    code_due=code_due)
        failures = []
        if choice.route == "synthesized" and choice.arm is not None and self.config.failures:
            failures = self.bank.failures(cluster, choice.arm.evidence.harness_id, self.config.failures)
        return cluster, choice, failures

    def _write_tools(self, cluster: str, parent_id: str, seed: int) -> None:
        """Write code for the cluster in the background (one job per cluster at a time); what is accepted
        joins the cluster's arms for later tasks. `settle` waits for the jobs."""
        if cluster not in self._tooling:
            job = asyncio.get_running_loop().create_task(self.toolshop.run(cluster, self.spec_of(parent_id),
                                                                           seed))
            self._tooling[cluster] = job
            job.add_done_callback(lambda done: self._tool_done(cluster, done))

    def _tool_done(self, cluster: str, job: asyncio.Task) -> None:
        self._tooling.pop(cluster, None)
        if not job.cancelled() and job.exception() is not None:
            log.error("writing code for %s failed: %s", cluster, one_line(job.exception()))

    async def settle(self) -> None:
        """Wait until no code is being written for any cluster and no adapter trained (a stream that must see
        them, the bench)."""
        while self._tooling:
            await asyncio.gather(*self._tooling.values(), return_exceptions=True)
        await self.retrainer.settle()

    def _keep_candidates(self, task: Task, synthesis: Synthesis) -> None:
        for c in synthesis.candidates:
            record = c.to_dict() | {"spec": c.spec.model_dump(mode="json") if c.spec is not None
                                    and c.valid else None,
                                    "history": [r.__dict__ for r in c.rounds]
                                    + [{"checks": [k.__dict__ for k in c.checks]}]}
            self.bank.record_candidate(task.id, task.prompt, record, self.meta.name)

    def _record(self, run_id: str, task: Task, route: Route, spec: HarnessSpec, run: RunResult | None,
                cluster: str, delivery: str | None, verified: bool) -> Decision | None:
        """The run under its id (feedback finds its harness, task and cluster there) and, when it was
        verified, its outcome through admission; the bank's decision, or None when there is none."""
        self.bank.add_harness(spec.model_dump(mode="json"))
        record = RunRecord(
            run_id=run_id, harness_id=spec.id, task_id=task.id, task_text=task.prompt, cluster=cluster,
            route=route, task_type=task.type, tags=tuple(task.tags),
            answer=run.answer if run else None, trace=last_steps(run) if run else "",
            solution=run.solution if run else None, prompt_tokens=run.cost.prompt_tokens if run else None,
            completion_tokens=run.cost.completion_tokens if run else None,
            wall_s=run.cost.wall_s if run else None)
        if not verified:
            self.bank.record_run(record)
            return None
        return record_verified(self.bank, task, spec, run, cluster, delivery, run_id, record)


def record_verified(bank: HarnessBank, task: Task, spec: HarnessSpec, run: RunResult,
                    cluster: str | None = None, delivery: str | None = None,
                    run_id: str | None = None, record: RunRecord | None = None) -> Decision:
    """A verified run into the bank (its harness stored first): its outcome through admission, with its run
    record in the same transaction where there is one, and its task among its cluster's labelled tasks,
    which code written for the cluster is tried on."""
    cluster = cluster or bank.cluster_for(task.prompt, task.type, tuple(task.tags))
    decision = bank.record_outcome(outcome_of(task, spec, run, cluster, delivery, run_id), run=record)
    bank.record_labelled_task(cluster, task.id, task.model_dump(mode="json", exclude_defaults=True))
    return decision


def outcome_of(task: Task, spec: HarnessSpec, run: RunResult, cluster: str | None = None,
               delivery: str | None = None, run_id: str | None = None) -> Outcome:
    """A verified run as the bank's evidence (the bank needs the harness stored first)."""
    return Outcome(harness_id=spec.id, task_id=task.id, task_text=task.prompt, reward=run.reward,
                   prompt_tokens=run.cost.prompt_tokens, completion_tokens=run.cost.completion_tokens,
                   wall_s=run.cost.wall_s, verdict=run.verdict[:500], cluster=cluster, task_type=task.type,
                   tags=tuple(task.tags), source="run", answer=run.answer, trace=last_steps(run),
                   delivery=delivery, run_id=run_id, solution=run.solution)


def last_steps(run: RunResult, steps: int = 3, limit: int = 400) -> str:
    """The run's last model and tool steps, trimmed: what a reflective mutation reads."""
    events = [e for e in run.trajectory.events if e.kind in ("model", "tool", "verify")][-steps:]
    return "\n".join(f"[{e.kind}{':' + e.tool if e.tool else ''}] {e.text[:limit]}" for e in events)
