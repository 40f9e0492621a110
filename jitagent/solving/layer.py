"""The solving layer under every door (gRPC, the OpenAI-compatible HTTP door, MCP, the queue's worker and
the command line): readiness, one admission, one run per run id, deadlines and cancellation, one error
type, the one log line. A door is a table from `SolveError.kind` to its status and a function from the
result (`solved.Solved`) to its wire form.

Admission: at most `max_concurrent` solves open at once (a call, or a stream of tasks) — one more is
refused at once — and `concurrency` tasks worked on at once, past which at most `max_queue` wait, every
door's counted together.

One run per run id: a call that names its solve (`request_id`, which becomes the run id) may retry it
safely. A call whose run is in progress here follows that run from its first event instead of starting
another; one whose run is over gets its result, from this process's memory of its last results or else
from the bank's record of the run (any replica's, across restarts). Two replicas that started the same
id at once record it once; the one that lost answers with the other's record. A run belongs to the calls
following it: it is cancelled when the last of them goes (its deadline passed, it was cancelled, its
connection broke), and a retry after that runs it anew.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
import uuid
from collections import Counter, OrderedDict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, contextmanager
from typing import Literal

from harness_bank import HarnessRecord, Rollback
from harness_bank.bank import BankError
from harness_bank.pools import pool_of
from harness_bank.recorded import RecordedRun, recorded_run
from harness_bank.store import StoreUnavailable
from harness_bank.views import ArmView, BankViews
from jitagent.common.errors import clipped
from jitagent.improvement.synthesis.synthesize import SYNTHESIS_PHASES, SynthesisConfig, SynthesisCost
from jitagent.models.base import Cancelled, CancelToken, ModelError
from jitagent.runtime.channel import last_of
from jitagent.runtime.events import Cost, RunResult, Trajectory
from jitagent.solving.access import OPERATOR, Access, Caller
from jitagent.solving.confinement import CODE_TOOLS, CODE_VERIFIERS, confined, refusal, without_code_tools
from jitagent.solving.events import SolveEvent, SolveResult
from jitagent.solving.feedback import FeedbackError, Recorded, Report
from jitagent.solving.pipeline import JitPipeline
from jitagent.tasks.task import Task

log = logging.getLogger("jitagent.solving.layer")

ErrorKind = Literal["loading", "busy", "deadline", "cancelled", "model", "bank", "bad_request", "not_found",
                    "conflict", "precondition", "permission", "quota", "internal"]
# the kinds no retry can mend: the request itself is wrong
PERMANENT: frozenset[ErrorKind] = frozenset({"bad_request", "not_found", "conflict", "precondition",
                                             "permission", "quota"})
MAX_PAGE = 1000  # harnesses listed in one call
REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")  # a caller's name for its run, which becomes the run id
REQUEST_ID_RULE = "1-128 characters of A-Z a-z 0-9 . _ : - (or empty: a new run each call)"
MAX_N = next(m.le for m in SynthesisConfig.model_fields["n"].metadata if hasattr(m, "le"))
FEEDBACK_KINDS: dict[str, ErrorKind] = {"invalid": "bad_request", "not_found": "not_found",
                                        "already_reported": "conflict"}


class SolveError(Exception):
    """Why a call could not be served, by kind; `violations`: the (field, problem) pairs of a bad request."""

    def __init__(self, kind: ErrorKind, message: str, violations: tuple[tuple[str, str], ...] = ()):
        super().__init__(message)
        self.kind, self.violations = kind, tuple(violations)


class Run:
    """A run in progress and the events it has given so far, for every call that follows it."""

    def __init__(self):
        self.events: list[SolveEvent] = []
        self.failure: SolveError | None = None
        self.followers = 0
        self.news = asyncio.Event()
        self.task: asyncio.Task | None = None

    def tell(self) -> None:
        self.news.set()
        self.news = asyncio.Event()

    @property
    def joinable(self) -> bool:
        return not self.task.done() and not self.task.cancelling()

    async def follow(self) -> AsyncIterator[SolveEvent]:
        self.followers += 1
        try:
            seen = 0
            while seen < len(self.events) or not self.task.done():
                if seen < len(self.events):
                    yield self.events[seen]
                    seen += 1
                else:
                    await self.news.wait()
            if self.failure is not None:
                raise self.failure
        finally:
            self.followers -= 1
            if not self.followers:  # no one is waiting for it any more
                self.task.cancel()


class Solving:
    """The layer every door calls. `pipeline`: set once loaded (None while loading; `load_error` says why
    it could not be). `on_result`: told every result (the server's metrics). `access`: who may call, and
as whom (open: everyone is the operator)."""

    def __init__(self, pipeline: JitPipeline | None = None, *, concurrency: int = 1, max_queue: int = 64,
                 max_concurrent: int = 128, remember: int = 256,
                 on_result: Callable[[SolveResult], None] | None = None, access: Access | None = None,
                 allow_unconfined: bool = False):
        self.pipeline, self.load_error = pipeline, None
        self.access = access or Access()
        self.runs_code: bool | None = True if allow_unconfined else None  # None: not yet probed
        self.slots = asyncio.Semaphore(concurrency)
        self.max_queue, self.max_concurrent, self.remember = max_queue, max_concurrent, remember
        self.waiting = self.working = self.open_solves = 0
        self.open_by_tenant: Counter[str] = Counter()
        self.on_result = on_result
        self.running: dict[str, Run] = {}
        self.finished: OrderedDict[str, SolveResult] = OrderedDict()

    def ready(self) -> JitPipeline:
        if self.load_error is not None:
            raise SolveError("loading", f"the server could not start: {self.load_error}")
        if self.pipeline is None:
            raise SolveError("loading", "loading models and the harness bank; retry soon")
        return self.pipeline

    @contextmanager
    def admitted(self, caller: Caller = OPERATOR, tasks: int = 1):
        """One open solve (a call, or a stream of tasks) of `tasks` tasks at most: past `max_concurrent`,
        or past the caller's tenant's own `max_open`, refused at once; past its `max_batch`, refused."""
        if caller.max_batch is not None and tasks > caller.max_batch:
            raise SolveError("quota", f"{tasks} tasks in one call; tenant {caller.tenant!r} may send at most "
                                      f"{caller.max_batch}", (("tasks", f"at most {caller.max_batch}"),))
        if self.open_solves >= self.max_concurrent:
            raise SolveError("busy", f"{self.open_solves} solves are open, the limit (--max-concurrent "
                                     f"{self.max_concurrent}); retry later or on another replica")
        if caller.max_open is not None and self.open_by_tenant[caller.tenant] >= caller.max_open:
            raise SolveError("busy", f"tenant {caller.tenant!r} has {caller.max_open} solves open, its "
                                     f"quota; retry when one is done")
        self.open_solves += 1
        self.open_by_tenant[caller.tenant] += 1
        try:
            yield
        finally:
            self.open_solves -= 1
            self.open_by_tenant[caller.tenant] -= 1

    def admissible(self) -> None:
        """Refuse now a task that would wait past `max_queue` (a door that answers before working)."""
        if self.slots.locked() and self.waiting >= self.max_queue:
            raise SolveError("busy", f"queue full: {self.waiting} tasks waiting (max_queue "
                                     f"{self.max_queue}); retry later")

    def name_run(self, request_id: str | None, caller: Caller, field: str = "request_id") -> tuple[str, bool]:
        """The run id of a call and whether it may replay: the caller's `request_id` (it may have run
        before), else a new one, in the caller's tenant. SolveError (bad_request, naming `field`) for an id
        that cannot be one."""
        if request_id and not REQUEST_ID.fullmatch(request_id):
            raise SolveError("bad_request", f"{field}: {REQUEST_ID_RULE}", ((field, REQUEST_ID_RULE),))
        return self.access.run_id(caller, request_id or new_run_id()), bool(request_id)

    @staticmethod
    def candidates(n: int | None, field: str = "n") -> int | None:
        """A call's candidates per synthesis; 0 or None: the server's own (`serve --n`)."""
        if not n:
            return None
        if not 1 <= n <= MAX_N:
            rule = f"must be between 1 and {MAX_N} (or 0 for the server's --n)"
            raise SolveError("bad_request", f"{field}: {rule}, got {n}", ((field, rule),))
        return n

    async def solve(self, task: Task, **kw) -> SolveResult:
        return await last_of(self.events(task, **kw), SolveResult)

    async def events(self, task: Task, *, run_id: str | None = None, replay: bool = False,
                     execute: bool = True, n: int | None = None, deadline: float | None = None,
                     delivery: str | None = None, door: str = "grpc",
                     caller: Caller = OPERATOR) -> AsyncIterator[SolveEvent]:
        """The events of one task's run under `run_id` (`name_run`'s; default: a new one), the result last.
        With `replay` (the id is the caller's, so it may have run before): the run in progress under it, or
        only the result of the one that is over. `deadline` (monotonic) stops its work; SolveError says
        why it could not finish. `caller`: whose memory the run learns in and from (its tenant's pool)."""
        self.ready()
        run_id, n = run_id or new_run_id(), self.candidates(n)
        run = self._joinable(run_id)
        if run is None and replay and (result := await self._over(run_id)) is not None:
            yield result
            return
        task = await self._confinable(task)
        if self._joinable(run_id) is None:
            await self._within_quota(caller, task)
        run = self._joinable(run_id)  # a call with the same id may have started it meanwhile
        if run is None:
            run = self.running[run_id] = Run()
            work = self._drive(run, task, run_id, execute, n, deadline, delivery, door, caller)
            run.task = asyncio.create_task(work)
            run.task.add_done_callback(lambda _: self._done(run_id, run, replay))
        try:
            async for event in run.follow():
                yield event
        except SolveError as exc:
            # another replica ran the same id at the same time and recorded it first: its result is ours
            if replay and exc.kind == "internal" and (result := await self._over(run_id)) is not None:
                yield result
                return
            raise

    async def _confinable(self, task: Task) -> Task:
        """The task as this server may run it: where runs cannot be confined (and the operator did not
        allow it anyway), without the tools that run code, and refused (precondition) where its verifier
        runs code; the pipeline then runs no code of its own either (`JitPipeline.confine`)."""
        pipeline = self.ready()
        if self.runs_code is None:
            self.runs_code = await asyncio.to_thread(confined)
            if not self.runs_code:
                log.warning(json.dumps({"event": "unconfined", "refused": sorted(CODE_VERIFIERS),
                                        "tools_taken_out": sorted(CODE_TOOLS)}))
                pipeline.confine()
        if self.runs_code:
            return task
        if problem := refusal(task):
            raise SolveError("precondition", problem, (("task.verifier.kind", "runs code"),))
        return without_code_tools(task)

    async def _within_quota(self, caller: Caller, task: Task) -> None:
        """Refuse a run the bank would keep past the tenant's `max_runs`, or in a cluster past its pool's
        `max_clusters` (quota: nothing is run or stored)."""
        if caller.max_runs is None and caller.max_clusters is None:
            return
        pool = self.access.pool(caller)

        def check(bank) -> None:
            named = self.access.run_id(caller, "")
            # with those in progress here, whose runs the bank keeps only once they are over
            kept = bank.catalog.runs_named(named) + sum(r.startswith(named) for r in self.running)
            if caller.max_runs is not None and kept >= caller.max_runs:
                raise SolveError("quota", f"tenant {caller.tenant!r} has {kept} runs kept, its quota "
                                          f"(max_runs {caller.max_runs}); the operator may raise it")
            if caller.max_clusters is not None:
                clusters = [c for c in BankViews(bank).cluster_names() if pool_of(c) == pool]
                cluster = bank.cluster_for(task.prompt, task.type, tuple(task.tags), pool)
                if cluster not in clusters and len(clusters) >= caller.max_clusters:
                    raise SolveError("quota", f"task {task.id} would open cluster {clipped(cluster)}; pool "
                                              f"{pool!r} has {len(clusters)} clusters, its quota "
                                              f"(max_clusters {caller.max_clusters})")
        await self._bank_call(check)

    async def report(self, report: Report, caller: Caller, *, door: str = "grpc", **kw) -> Recorded:
        """An outcome someone reports (`JitPipeline.report_outcome`); SolveError names what was wrong. One
        that names no run (free-form: a harness and a task text) is the operator's."""
        run_id = kw.get("run_id")
        if not run_id:
            only_the_operator(caller, "a report that names no run_id (free-form)")
        elif not self.access.owns(caller, run_id):  # said as the bank says a run it does not have
            raise SolveError("not_found", f"no run {clipped(repr(run_id))} in this bank",
                             (("run_id", "not found"),))
        if "report" not in caller.teaches:
            raise SolveError("permission", f"tenant {caller.tenant!r}'s reports do not teach this deployment "
                                           f"(its tokens file entry's `teaches`)")
        report.evidence = self.access.reporter(caller)
        try:
            done = await self.ready().report_outcome(report, slot=self._slot, **kw)
        except FeedbackError as exc:
            violations = ((exc.field, exc.description),) if exc.kind == "invalid" else ()
            raise SolveError(FEEDBACK_KINDS[exc.kind], str(exc), violations) from None
        except StoreUnavailable as exc:
            raise unreachable(exc) from None
        log.info(json.dumps({"event": "report", "door": door, "run_id": kw.get("run_id", ""),
                             "harness_id": done.harness_id, "cluster": done.cluster, "reward": report.reward,
                             "promoted": done.decision.promote}))
        return done

    # --- the bank, read and steered through the same layer ------------------------------------
    async def harness(self, harness_id: str, caller: Caller = OPERATOR) -> HarnessRecord:
        """A harness the caller may read (a client: the seeds and its pool's own); not_found else."""
        if not harness_id:
            raise SolveError("bad_request", "id: required", (("id", "required"),))
        pool = self.access.reads(caller)
        return await self._bank_call(lambda bank: bank.get(harness_id, pool), "not_found")

    async def harnesses(self, origin: str | None, limit: int, offset: int,
                        caller: Caller = OPERATOR) -> list[HarnessRecord]:
        """A page of the harnesses the caller may read (`limit` 0: 100), optionally of one origin."""
        if not 0 <= limit <= MAX_PAGE or offset < 0:
            raise SolveError("bad_request", f"limit: 0-{MAX_PAGE} (0: 100); offset: >= 0",
                             (("limit", f"0-{MAX_PAGE} (0: 100)"), ("offset", ">= 0")))
        pool = self.access.reads(caller)
        return await self._bank_call(lambda bank: bank.list_harnesses(origin, limit or 100, offset, pool))

    async def lineage(self, harness_id: str, caller: Caller = OPERATOR) -> list[HarnessRecord]:
        pool = self.access.reads(caller)
        return await self._bank_call(lambda bank: bank.lineage(harness_id, pool), "not_found")

    async def rollback(self, cluster: str, caller: Caller) -> Rollback:
        only_the_operator(caller, "Rollback")
        if not cluster:
            raise SolveError("bad_request", "cluster: required", (("cluster", "required"),))
        return await self._bank_call(lambda bank: bank.rollback(cluster), "precondition")

    async def cluster_names(self) -> list[str]:
        return await self._bank_call(lambda bank: BankViews(bank).cluster_names())

    async def cluster_arms(self, cluster: str) -> list[ArmView]:
        """The cluster's arms as `jitagent bank arms` shows them; not_found for a cluster never seen."""
        return await self._bank_call(lambda bank: BankViews(bank).arms(cluster), "not_found")

    def close(self) -> None:
        """Flush and close the bank (its index is written out), where one was loaded."""
        if self.pipeline is not None:
            self.pipeline.practice.stop()
            self.pipeline.bank.close()

    async def _bank_call(self, call, refused: ErrorKind = "bad_request"):
        """`call(bank)` in a thread; the bank's refusal as `refused`, an unreachable bank as `bank`."""
        bank = self.ready().bank
        try:
            return await asyncio.to_thread(call, bank)
        except BankError as exc:
            raise SolveError(refused, clipped(str(exc))) from None
        except StoreUnavailable as exc:
            raise unreachable(exc) from None

    # --- the work ----------------------------------------------------------------------------
    async def _drive(self, run: Run, task: Task, run_id: str, execute: bool, n: int | None,
                     deadline: float | None, delivery: str | None, door: str, caller: Caller) -> None:
        """The pipeline's events for one task into `run`, in a slot, learning in the caller's pool from
        the evidence it trusts of the caller; what stops it, as a SolveError."""
        cancel = CancelToken(deadline)
        try:
            async with self._slot():
                async for event in self.ready().stream(task, execute=execute, n=n, cancel=cancel,
                                                       run_id=run_id, delivery=delivery,
                                                       pool=self.access.pool(caller), trusted=caller.teaches):
                    if isinstance(event, SolveResult):
                        self._finish(event, door)
                        if event.run is not None and event.run.interrupted and cancel.is_cancelled():
                            raise Cancelled(f"task {task.id}: {event.run.error}")
                    run.events.append(event)
                    run.tell()
        except asyncio.CancelledError:
            cancel.cancel()  # the last follower went: stop the model and tool work it started
            raise
        except Exception as exc:
            run.failure = failure(exc, task, run_id)
        finally:
            run.tell()

    def _finish(self, result: SolveResult, door: str) -> None:
        """The one log line of a task, and whoever watches results."""
        if self.on_result is not None:
            self.on_result(result)
        run, cost = result.run, result.synthesis_cost
        log.info(json.dumps({
            "event": "task", "door": door, "task_id": result.task_id, "run_id": result.run_id,
            "route": result.route, "harness_id": result.harness.id, "cluster": result.cluster,
            "reward": run.reward if run else None, "passed": run.passed if run else None,
            "synthesis_tokens": cost.synthesis.tokens, "repair_tokens": cost.repair.tokens,
            "execution_tokens": run.cost.tokens if run else None, "wall_s": round(result.wall_s, 3),
            "bank": result.bank_decision, "error": run.error if run else None}))

    @asynccontextmanager
    async def _slot(self):
        """One of `concurrency` places to work; past `max_queue` waiting, refused instead of queued."""
        self.admissible()
        self.waiting += 1
        try:
            await self.slots.acquire()
        finally:
            self.waiting -= 1
        self.working += 1
        try:
            yield
        finally:
            self.working -= 1
            self.slots.release()

    # --- runs by id --------------------------------------------------------------------------
    def _joinable(self, run_id: str) -> Run | None:
        run = self.running.get(run_id)
        return run if run is not None and run.joinable else None

    def _done(self, run_id: str, run: Run, named: bool) -> None:
        if self.running.get(run_id) is run:
            del self.running[run_id]
        if named and run.events and isinstance(run.events[-1], SolveResult):
            self.finished[run_id] = run.events[-1]
            while len(self.finished) > self.remember:
                self.finished.popitem(last=False)

    async def _over(self, run_id: str) -> SolveResult | None:
        """The result of the run `run_id` that is over: remembered here, or recorded in the bank."""
        if run_id in self.finished:
            return self.finished[run_id]
        pipeline = self.ready()
        try:
            found = await asyncio.to_thread(recorded_run, pipeline.bank, run_id)
        except StoreUnavailable as exc:
            raise unreachable(exc) from None
        return None if found is None else await asyncio.to_thread(recorded_result, pipeline, found)


def only_the_operator(caller: Caller, what: str) -> None:
    if not caller.operator:
        raise SolveError("permission", f"{what} is the operator's; tenant {caller.tenant!r} holds a client's "
                                       f"token")


def failure(exc: Exception, task: Task, run_id: str) -> SolveError:
    """What stopped a task's run, as the error a door answers with."""
    match exc:
        case SolveError():
            return exc
        case Cancelled():
            return SolveError("deadline", str(exc))
        case ModelError():
            return SolveError("model", f"model back-end failed: {exc}")
        case StoreUnavailable():
            return unreachable(exc)
    # a bug, not the task's doing: logged whole, told without its text (it can name host paths)
    log.error(json.dumps({"event": "task_crashed", "task_id": task.id, "run_id": run_id}), exc_info=exc)
    return SolveError("internal", f"task {task.id}: the server failed on it; its log says why (run {run_id})")


def unreachable(exc: StoreUnavailable) -> SolveError:
    """A bank that cannot be reached: a retry may find it back."""
    return SolveError("bank", f"the bank is unreachable: {exc}; retry")


def recorded_result(pipeline: JitPipeline, found: RecordedRun) -> SolveResult:
    """A finished run as the bank recorded it: its harness, route, cluster, answer and cost, and its
    outcome's reward and verdict where it has one. What is not kept is unknown: the trajectory, the arms,
    and a synthesis's cost (none where nothing was synthesized)."""
    run = found.run
    cost = Cost(prompt_tokens=run.prompt_tokens, completion_tokens=run.completion_tokens,
                wall_s=run.wall_s or 0.0)
    passed = None if found.reward is None else found.reward >= 1.0  # a verifier's pass is its full reward
    outcome = RunResult(task_id=run.task_id, harness_id=run.harness_id, answer=run.answer, passed=passed,
                        reward=found.reward, verdict=found.verdict or "recorded without an outcome",
                        cost=cost, trajectory=Trajectory(), solution=run.solution)
    unknown = SynthesisCost(**{phase: Cost(prompt_tokens=None, completion_tokens=None)
                               for phase in SYNTHESIS_PHASES})
    synthesized = run.route in ("synthesized", "fallback")
    return SolveResult(task_id=run.task_id, route=run.route, harness=pipeline.spec_of(run.harness_id),
                       cluster=run.cluster, synthesis=None, run=outcome, references=[],
                       synthesis_cost=unknown if synthesized else SynthesisCost(), wall_s=run.wall_s or 0.0,
                       run_id=run.run_id)


def new_run_id() -> str:
    return uuid.uuid4().hex


def deadline_in(seconds: float | None) -> float | None:
    """A monotonic deadline `seconds` from now (None: none)."""
    return None if seconds is None else time.monotonic() + seconds
