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
import random
import time
import uuid
import zlib
from collections.abc import AsyncIterator

from pydantic import BaseModel, Field

from harness_bank import Decision, HarnessBank, Outcome, RunRecord
from harness_bank.router import RouteChoice, Router, RouterConfig
from jitagent.events import BankDecision, Chosen, Retrieved, Route, Routed, SolveEvent, SolveResult
from jitagent.feedback import Recorded, Report, report_harness, report_run
from jitagent.models.base import CancelToken, ModelClient
from jitagent.runtime.agent import Runtime
from jitagent.runtime.channel import last_of
from jitagent.runtime.events import RunResult
from jitagent.spec import HarnessSpec, parse_spec
from jitagent.synthesis.synthesize import Synthesis, SynthesisConfig, SynthesisCost, Synthesizer
from jitagent.tasks import Task


class PipelineConfig(BaseModel):
    router: RouterConfig = Field(default_factory=RouterConfig)
    learn: bool = Field(True, description="record outcomes in the bank (streaming JIT); False: static")
    keep_candidates: bool = Field(True,
                                  description="store every candidate in the bank (lineage, training data)")
    mutation_n: int = Field(1, ge=1, le=8, description="candidates of a reflective mutation: the bandit, not "
                                                          "the meta-model's taste, chooses among variants")
    failures: int = Field(3, ge=0, le=5, description="recent failures of the parent shown to a mutation")
    synthesis: SynthesisConfig = Field(default_factory=SynthesisConfig)


class JitPipeline:
    """Route, synthesize where the router explores, execute, verify and record, one task at a time
    (`stream` yields what happens as it happens, `solve` only the result). With `learn`, every run is
    recorded in the bank under its run id (`report_outcome` names it) and a verified run's outcome is
    admitted as evidence."""

    def __init__(self, bank: HarnessBank, meta: ModelClient, solver: ModelClient,
                 config: PipelineConfig | None = None):
        self.bank = bank
        self.meta = meta
        self.solver = solver
        self.config = config or PipelineConfig()
        self.router = Router(self.config.router)
        self.runtime = Runtime(solver)
        self.synthesizer = Synthesizer(meta, self.runtime, self.config.synthesis)
        self._specs: dict[str, HarnessSpec] = {}

    async def stream(self, task: Task, *, execute: bool = True, seed: int = 0,
                     cancel: CancelToken | None = None, deadline: float | None = None, n: int | None = None,
                     delivery: str | None = None, run_id: str | None = None) -> AsyncIterator[SolveEvent]:
        """`delivery`: the queue delivery the task came from; the bank records its outcome once.
        `run_id`: the id the run is recorded under (default: a new one), in the result."""
        start = time.monotonic()
        run_id = run_id or uuid.uuid4().hex
        cancel = cancel or CancelToken()
        if deadline is not None:
            cancel.deadline = deadline if cancel.deadline is None else min(deadline, cancel.deadline)
        cluster, choice, failures = await asyncio.to_thread(self._route, task, seed)
        arms = tuple(a.summary() for a in choice.arms)
        synthesis, cost = None, SynthesisCost()
        if choice.route != "synthesize":
            route: Route = choice.route
            spec = self.spec_of(choice.arm.evidence.harness_id)
            yield Routed(route=route, cluster=cluster, arms=arms,
                         text=f"{route} {spec.name} in {cluster}: {choice.reason}")
        else:
            parents = [choice.arm] if choice.arm is not None else sorted(
                choice.arms, key=lambda a: (-a.mean, -a.evidence.similarity))
            specs = [self.spec_of(a.evidence.harness_id) for a in parents]
            yield Retrieved(text=", ".join(f"{a.evidence.name} ({a.mean:.2f})" for a in parents), arms=arms)
            mutation = choice.arm is not None
            async for item in self.synthesizer.stream(
                    task, specs, {a.evidence.harness_id: a.mean for a in parents}, seed, cancel,
                    self.config.mutation_n if mutation else n, failures=failures if mutation else None,
                    clean_parents=frozenset(a.evidence.harness_id for a in choice.arms if a.evidence.runs)):
                if isinstance(item, Synthesis):
                    synthesis = item
                else:
                    yield item
            cost = synthesis.cost
            if self.config.keep_candidates:
                await asyncio.to_thread(self._keep_candidates, task, synthesis)
            if synthesis.chosen is not None:
                route, spec = "synthesized", synthesis.chosen
            else:
                route, spec = "fallback", self.spec_of((choice.best or parents[0]).evidence.harness_id)
            kind = "mutation of " + choice.arm.evidence.name if mutation else "cold cluster"
            yield Routed(route=route, cluster=cluster, arms=arms,
                         text=f"{route} ({kind}; {choice.reason}): {synthesis.reason}")
        yield Chosen(harness=spec)
        run, verified, admitted = None, False, None
        if execute:
            async for event in self.runtime.stream(spec, task, seed=seed, cancel=cancel, deadline=deadline):
                if isinstance(event, RunResult):
                    run = event
                else:
                    yield event
            # an infrastructure failure says nothing of the harness, but running out of the caller's time
            # budget is a genuine 0 (a harness too slow for it must lose share); an unverified run waits
            out_of_time = (run.interrupted and cancel.deadline is not None
                           and time.monotonic() >= cancel.deadline)
            verified = (run.error is None or out_of_time) and task.verifier.kind != "none"
        if self.config.learn:
            decision = await asyncio.to_thread(self._record, run_id, task, spec, route, run, cluster,
                                               delivery, verified)
            if decision is not None:
                admitted = BankDecision(cluster=cluster, promoted=decision.promote, reason=decision.reason)
                yield admitted
        yield SolveResult(task_id=task.id, route=route, harness=spec, cluster=cluster, synthesis=synthesis,
                          run=run, references=list(arms), synthesis_cost=cost,
                          wall_s=time.monotonic() - start, bank_decision=admitted.text if admitted else "",
                          run_id=run_id)

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
        """The task's cluster, the bandit's choice and, for a mutation, its parent's recent failures.
        One thread hop for all the bank reads; the draw is seeded by (seed, task), so a run repeats."""
        cluster = self.bank.cluster_for(task.prompt, task.type, tuple(task.tags))
        evidence, base = self.bank.arm_evidence(task.prompt, cluster, self.config.router.references)
        rng = random.Random(zlib.crc32(f"{seed}:{task.id}:{task.prompt}".encode()))
        choice = self.router.choose(evidence, base, rng)
        failures = []
        if choice.route == "synthesize" and choice.arm is not None and self.config.failures:
            failures = self.bank.failures(cluster, choice.arm.evidence.harness_id, self.config.failures)
        return cluster, choice, failures

    def spec_of(self, harness_id: str) -> HarnessSpec:
        """Specs are immutable by id (content digest), so parsed ones are cached."""
        spec = self._specs.get(harness_id)
        if spec is None:
            if len(self._specs) >= 4096:
                self._specs.clear()
            spec = self._specs[harness_id] = parse_spec(self.bank.get(harness_id).spec)
        return spec

    def _keep_candidates(self, task: Task, synthesis: Synthesis) -> None:
        for c in synthesis.candidates:
            record = c.to_dict() | {"spec": c.spec.model_dump(mode="json") if c.spec is not None
                                    and c.valid else None,
                                    "history": [r.__dict__ for r in c.rounds]
                                    + [{"checks": [k.__dict__ for k in c.checks]}]}
            self.bank.record_candidate(task.id, task.prompt, record, self.meta.name)

    def _record(self, run_id: str, task: Task, spec: HarnessSpec, route: Route, run: RunResult | None,
                cluster: str, delivery: str | None, verified: bool) -> Decision | None:
        """The run under its id (feedback finds its harness, task and cluster there) and, when it was
        verified, its outcome through admission; the bank's decision, or None when there is none."""
        self.bank.add_harness(spec.model_dump(mode="json"))
        record = RunRecord(
            run_id, spec.id, task.id, task.prompt, cluster, route, task.type, tuple(task.tags),
            answer=run.answer if run else None, trace=last_steps(run) if run else "",
            prompt_tokens=run.cost.prompt_tokens if run else None,
            completion_tokens=run.cost.completion_tokens if run else None,
            wall_s=run.cost.wall_s if run else None)
        if not verified:
            self.bank.record_run(record)
            return None
        return self.bank.record_outcome(outcome_of(task, spec, run, cluster, delivery, run_id), run=record)


def outcome_of(task: Task, spec: HarnessSpec, run: RunResult, cluster: str | None = None,
               delivery: str | None = None, run_id: str | None = None) -> Outcome:
    """A verified run as the bank's evidence (the bank needs the harness stored first)."""
    return Outcome(harness_id=spec.id, task_id=task.id, task_text=task.prompt, reward=run.reward,
                   prompt_tokens=run.cost.prompt_tokens, completion_tokens=run.cost.completion_tokens,
                   wall_s=run.cost.wall_s, verdict=run.verdict[:500], cluster=cluster, task_type=task.type,
                   tags=tuple(task.tags), source="run", answer=run.answer, trace=last_steps(run),
                   delivery=delivery, run_id=run_id)


def last_steps(run: RunResult, steps: int = 3, limit: int = 400) -> str:
    """The run's last model and tool steps, trimmed: what a reflective mutation reads."""
    events = [e for e in run.trajectory.events if e.kind in ("model", "tool", "verify")][-steps:]
    return "\n".join(f"[{e.kind}{':' + e.tool if e.tool else ''}] {e.text[:limit]}" for e in events)
