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
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator

from harness_bank import Decision, HarnessBank, RunRecord
from harness_bank.router import Route
from jitagent.common.errors import one_line
from jitagent.harness.seeds import spec_reader
from jitagent.harness.spec import HarnessSpec
from jitagent.improvement.adapters import solver_for
from jitagent.improvement.examples import NOTHING, examples_for
from jitagent.improvement.practice import Failed, Practice, Slot
from jitagent.improvement.recording import last_steps, record_verified
from jitagent.improvement.retrain import Retrainer
from jitagent.improvement.synthesis.synthesize import Synthesis, SynthesisCost, Synthesizer
from jitagent.improvement.toolshop import Toolshop
from jitagent.models.base import CancelToken, ModelClient, base_model
from jitagent.runtime.agent import Runtime
from jitagent.runtime.channel import last_of
from jitagent.runtime.events import RunResult
from jitagent.solving.config import PipelineConfig
from jitagent.solving.confinement import CODE_VERIFIERS
from jitagent.solving.events import BankDecision, Chosen, Retrieved, Routed, SolveEvent, SolveResult
from jitagent.solving.feedback import Recorded, Report, report_harness, report_run
from jitagent.solving.routing import RouteDecision, Routing
from jitagent.tasks.task import Task, VerifierSpec

log = logging.getLogger(__name__)
# the latest unverified runs' tasks kept where practice is on (a failure reported is tried again): at most
# so many, of so many characters in all (a task's files count)
REMEMBERED, REMEMBERED_CHARS = 1024, 64 << 20


def verified(run: RunResult | None, task: Task, cancel: CancelToken,
             trusted: frozenset[str] | None = None) -> bool:
    """Whether the run's outcome is evidence for its harness: it ran, the task has a verifier (of a kind
    `trusted` names, where it names any), and no infrastructure failed — but running out of the caller's
    time budget is a genuine 0 (a harness too slow for it must lose share). An unverified run waits for a
    report."""
    if run is None or task.verifier.kind == "none":
        return False
    if trusted is not None and task.verifier.kind not in trusted:
        return False  # the operator does not take this caller's verifiers of this kind as proof
    if run.reward is None:
        return False  # the verifier did not judge it (paused at the client's calls: the answer is to come)
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
        self.runtime = Runtime(solver)
        self.synthesizer = Synthesizer(meta, self.runtime, self.config.synthesis,
                                       functools.partial(solver_for, bank, solver))
        self.toolshop = Toolshop(bank, writer or meta, self.config.toolmaking, self.config.plateau)
        self.spec_of = spec_reader(bank)
        self.retrainer = Retrainer(bank, base_model(solver), self.config.retrain)
        self.routing = Routing(bank, self.config, self.toolshop, self.spec_of, base_model(solver))
        self.practice = Practice(bank, self.spec_of, self.routing.ranked, self._execute, self.config.practice,
                                 on_kept=self.retrainer.verified)
        self._tooling: dict[str, asyncio.Task] = {}  # the clusters code is being written for
        # the task each latest run answered, as sent, with the verifier kinds its caller trusts
        self._sent: OrderedDict[str, tuple[Task, frozenset[str] | None]] = OrderedDict()
        self._sent_chars = 0  # their size(), summed as they come and go

    def confine(self) -> None:
        """Run no code of the bank's or the meta-model's: no harness with code sections is routed to or
        chosen from a synthesis, no candidate dry-runs, no code is written for clusters (a host that cannot
        confine runs; the solving layer takes the code tools out of the tasks)."""
        self.config.runs_code = self.config.online_tools = self.config.synthesis.dry_run = False

    async def stream(self, task: Task, *, execute: bool = True, seed: int = 0,
                     cancel: CancelToken | None = None, deadline: float | None = None, n: int | None = None,
                     delivery: str | None = None, run_id: str | None = None, pool: str = "",
                     trusted: frozenset[str] | None = None) -> AsyncIterator[SolveEvent]:
        """`delivery`: the queue delivery the task came from; the bank records its outcome once.
        `run_id`: the id the run is recorded under (default: a new one), in the result. `pool`: the
        memory its caller learns in and from (`HarnessBank.cluster_for`); `trusted`: the verifier kinds
        whose pass admits its run there (None: every kind)."""
        start = time.monotonic()
        run_id = run_id or uuid.uuid4().hex
        cancel = (cancel or CancelToken()).tighten(deadline)
        decision = await asyncio.to_thread(self.routing.decide, task, seed, pool)
        if decision.write_code:
            self._write_tools(decision.cluster, decision.choice.arm.evidence.harness_id, seed)
        route, spec, synthesis = decision.route, decision.spec, None
        cluster, arms = decision.cluster, decision.arms
        if spec is None:
            async for item in self._synthesize(task, decision, seed, cancel, n):
                if isinstance(item, Synthesis):
                    synthesis = item
                else:
                    yield item
            written = synthesis.chosen if synthesis.chosen is not None and (
                self.config.runs_code or not synthesis.chosen.code_sections) else None
            spec = written or self.spec_of(decision.choice.best.evidence.harness_id)
            route = "synthesized" if written else "fallback"
        yield Routed(route=route, cluster=cluster, arms=arms, text=decision.says(route, synthesis))
        run, shown = None, ()
        async for event in self._run(spec, task, cluster, execute, seed, cancel, deadline):
            if isinstance(event, RunResult):
                run = event
                continue
            if isinstance(event, Chosen):
                shown = event.examples
            yield event
        admitted = None
        proof = verified(run, task, cancel, trusted)
        self._remember(run_id, task, trusted, proof)
        if self.config.learn and (admitted := await self._learn(run_id, task, route, spec, run, cluster,
                                                                 delivery, proof)):
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
        yield Chosen(harness=spec, examples=shown.sources, evidence=shown.evidence)
        if execute:
            solver = await asyncio.to_thread(solver_for, self.bank, self.solver, spec)
            async for event in self.runtime.stream(spec, task, seed=seed, cancel=cancel, deadline=deadline,
                                                   examples=shown.messages, solver=solver):
                yield event

    async def _execute(self, spec: HarnessSpec, task: Task, cluster: str, seed: int,
                       deadline: float) -> RunResult:
        """A run of `spec` on `task` as a routed one runs (shown its examples, with its adapter), for
        practice."""
        cancel = CancelToken().tighten(deadline)
        return await last_of(self._run(spec, task, cluster, True, seed, cancel, deadline), RunResult)

    def _remember(self, run_id: str, task: Task, trusted: frozenset[str] | None, verified: bool) -> None:
        """A run that waits for a report, where practice is on: its task, for a failure to be tried again."""
        if not (self.config.learn and self.config.practice.tries) or verified:
            return
        self._sent[run_id] = (task, trusted)
        self._sent_chars += size(task)
        while len(self._sent) > REMEMBERED or self._sent_chars > REMEMBERED_CHARS:
            self._recall(next(iter(self._sent)))

    def _recall(self, run_id: str) -> tuple[Task | None, frozenset[str] | None]:
        """The task kept for `run_id` and its caller's trusted kinds, now forgotten ((None, None): none)."""
        task, trusted = self._sent.pop(run_id, (None, None))
        self._sent_chars -= size(task) if task is not None else 0
        return task, trusted

    async def _learn(self, run_id: str, task: Task, route: Route, spec: HarnessSpec, run: RunResult | None,
                     cluster: str, delivery: str | None, admit: bool) -> BankDecision | None:
        """The run recorded, and where it is to `admit` (verified) its outcome admitted (one more verified
        run for the retrainer); the bank's decision, or None."""
        decision = await asyncio.to_thread(self._record, run_id, task, route, spec, run, cluster, delivery,
                                           admit)
        if decision is None:
            return None
        self.retrainer.verified()
        return BankDecision(cluster=cluster, promoted=decision.promote, reason=decision.reason)

    async def _synthesize(self, task: Task, decision: RouteDecision, seed: int, cancel: CancelToken,
                          n: int | None) -> AsyncIterator[SolveEvent | Synthesis]:
        """Write a variant where the router explores by synthesis: a reflective mutation of the cluster's
        best arm from its recent failures, or in a cold cluster a harness from the best references. The
        synthesis's events, then the `Synthesis` (its candidates kept in the bank)."""
        choice = decision.choice
        mutation = choice.arm is not None
        parents = [choice.arm] if mutation else sorted(choice.arms,
                                                       key=lambda a: (-a.mean, -a.evidence.similarity))
        yield Retrieved(text=", ".join(f"{a.evidence.name} ({a.mean:.2f})" for a in parents),
                        arms=decision.arms)
        specs = [self.spec_of(a.evidence.harness_id) for a in parents]
        synthesis = None
        async for item in self.synthesizer.stream(
                task, specs, {a.evidence.harness_id: a.mean for a in parents}, seed, cancel,
                self.config.mutation_n if mutation else n, failures=decision.failures if mutation else None,
                clean_parents=frozenset(a.evidence.harness_id for a in choice.arms if a.evidence.runs)):
            if isinstance(item, Synthesis):
                synthesis = item
            else:
                yield item
        if self.config.keep_candidates:
            await asyncio.to_thread(self._keep_candidates, task, synthesis)
        yield synthesis

    async def solve(self, task: Task, **kw) -> SolveResult:
        return await last_of(self.stream(task, **kw), SolveResult)

    async def report_outcome(self, report: Report, *, run_id: str = "", harness_id: str = "",
                             task_text: str = "", task_id: str = "", task_type: str | None = None,
                             tags: tuple[str, ...] = (), check: VerifierSpec | None = None,
                             slot: Slot | None = None) -> Recorded:
        """An outcome someone reports (jitagent.solving.feedback): of the run recorded under `run_id`, else of
        `harness_id` run elsewhere on the task `task_text` describes. The bank's admission decides; a run of
        ours reported counts toward the adapter's next training like one verified here. `check`: how the
        reporter scored it, where it can say; a failure of a run of ours with its check is practised in the
        background (improvement.practice), where practice is on, the run's task is remembered and the check
        runs no code this host cannot confine; each try in a `slot`, where the caller gives one."""
        if run_id:
            recorded = await asyncio.to_thread(report_run, self.bank, run_id, report)
            self.retrainer.verified()
            sent, trusted = self._recall(run_id)
            if (sent is not None and self.practice.wants(report.reward, check, trusted)
                    and (self.config.runs_code or check.kind not in CODE_VERIFIERS)):
                self.practice.start(Failed(run_id, recorded.cluster, recorded.harness_id,
                                           sent.model_copy(update={"verifier": check}), slot))
            return recorded
        return await asyncio.to_thread(report_harness, self.bank, harness_id, task_text, report,
                                       task_id=task_id, task_type=task_type, tags=tags)

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
        """Wait until no code is being written for any cluster, nothing practised and no adapter trained (a
        stream that must see them, the bench)."""
        while self._tooling:
            await asyncio.gather(*self._tooling.values(), return_exceptions=True)
        await self.practice.settle()
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


def size(task: Task) -> int:
    return len(task.prompt) + sum(len(name) + len(text) for name, text in task.files.items())
