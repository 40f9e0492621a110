"""The JitAgent gRPC servicer: thin — parse, admit to a bounded queue, call the pipeline, stream."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, contextmanager

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from harness_bank.bank import BankError
from harness_bank.recorded import recorded_run
from harness_bank.store import StoreUnavailable
from jitagent.errors import clipped
from jitagent.events import SolveEvent, SolveResult
from jitagent.feedback import FeedbackError, Report
from jitagent.logs import bind
from jitagent.models.base import Cancelled, CancelToken, ModelError
from jitagent.pipeline import JitPipeline
from jitagent.server.convert import (
    check_n,
    check_request_id,
    event_to_proto,
    harness_to_proto,
    recorded_to_proto,
    synthesis_to_proto,
)
from jitagent.server.metrics import Metrics
from jitagent.server.solves import Solves, TaskFailed
from jitagent.v1 import jitagent_pb2 as pb
from jitagent.v1 import jitagent_pb2_grpc as pb_grpc
from jitagent.wire import RequestError, enum_name, task_from_proto

log = logging.getLogger("jitagent.server")


ENDINGS = {"DEADLINE_EXCEEDED": "the client's deadline passed; its work was stopped",
           "CANCELLED": "the client cancelled the call; its work was stopped"}
FEEDBACK_CODES = {"invalid": grpc.StatusCode.INVALID_ARGUMENT, "not_found": grpc.StatusCode.NOT_FOUND,
                  "already_reported": grpc.StatusCode.ALREADY_EXISTS}


def status_of(code: grpc.StatusCode, message: str,
              violations: list[tuple[str, str]] = ()) -> status_pb2.Status:
    """A google.rpc.Status; bad fields travel as google.rpc.BadRequest field violations."""
    status = status_pb2.Status(code=code.value[0], message=message)
    if violations:
        detail = any_pb2.Any()
        detail.Pack(error_details_pb2.BadRequest(field_violations=[
            error_details_pb2.BadRequest.FieldViolation(field=field, description=description)
            for field, description in violations]))
        status.details.append(detail)
    return status


def new_run_id() -> str:
    return uuid.uuid4().hex


def bank_unreachable(exc: StoreUnavailable) -> TaskFailed:
    """UNAVAILABLE: the client's retry policy tries again, by when the bank may be back."""
    return TaskFailed(grpc.StatusCode.UNAVAILABLE, f"the bank is unreachable: {exc}; retry")


class JitAgentService(pb_grpc.JitAgentServicer):
    def __init__(self, metrics: Metrics, concurrency: int, max_queue: int, max_concurrent: int):
        self.pipeline: JitPipeline | None = None  # set once models and the bank are loaded
        self.load_error: str | None = None  # why they could not be
        self.metrics = metrics
        self.slots = asyncio.Semaphore(concurrency)
        self.max_queue = max_queue
        self.waiting = 0
        self.max_concurrent = max_concurrent
        self.open_solves = 0
        self.solves = Solves(self._recorded)

    # --- plumbing --------------------------------------------------------------------------
    @contextmanager
    def _rpc(self, method: str, context):
        """Counted and timed; a call that does not end OK is logged with its status."""
        call = None
        try:
            with self.metrics.track(method, context) as call:
                yield
        finally:
            if call is not None and call.code != "OK":
                error = context.details() or ENDINGS.get(call.code, "")
                log.warning(json.dumps({"event": "rpc_failed", "method": method, "code": call.code,
                                        "error": error[:500]}))

    @staticmethod
    async def _invalid(context, exc: RequestError):
        await context.abort_with_status(rpc_status.to_status(
            status_of(grpc.StatusCode.INVALID_ARGUMENT, str(exc), exc.violations)))

    def _pipeline(self) -> JitPipeline:
        if self.load_error is not None:
            raise TaskFailed(grpc.StatusCode.UNAVAILABLE, f"the server could not start: {self.load_error}")
        if self.pipeline is None:
            raise TaskFailed(grpc.StatusCode.UNAVAILABLE, "loading models and the harness bank; retry soon")
        return self.pipeline

    async def _ready(self, context) -> JitPipeline:
        try:
            return self._pipeline()
        except TaskFailed as exc:
            await context.abort(exc.code, str(exc))

    @contextmanager
    def _admitted(self):
        """At most `max_concurrent` solves open at once (Solve and Synthesize calls, task streams): one
        more is refused at once, never queued without bound."""
        if self.open_solves >= self.max_concurrent:
            raise TaskFailed(grpc.StatusCode.RESOURCE_EXHAUSTED,
                             f"this replica has {self.open_solves} solves open, its limit (--max-concurrent "
                             f"{self.max_concurrent}); retry later or on another replica")
        self.open_solves += 1
        try:
            yield
        finally:
            self.open_solves -= 1

    @asynccontextmanager
    async def _slot(self):
        """Bounded concurrency; past `max_queue` waiting tasks the server says RESOURCE_EXHAUSTED
        instead of buffering without limit."""
        if self.slots.locked() and self.waiting >= self.max_queue:
            raise TaskFailed(grpc.StatusCode.RESOURCE_EXHAUSTED,
                             f"queue full: {self.waiting} tasks waiting (max_queue {self.max_queue}); "
                             "retry later")
        self.waiting += 1
        self.metrics.queue_depth.set(self.waiting)
        try:
            await self.slots.acquire()
        finally:
            self.waiting -= 1
            self.metrics.queue_depth.set(self.waiting)
        self.metrics.in_flight.inc()
        try:
            yield
        finally:
            self.metrics.in_flight.dec()
            self.slots.release()

    @staticmethod
    def _deadline(context) -> float | None:
        remaining = context.time_remaining()
        return None if remaining is None else time.monotonic() + remaining

    async def _events(self, context, task, run_id: str, *, execute: bool,
                      n: int) -> AsyncIterator[SolveEvent]:
        """Pipeline events for one task; a cancelled RPC cancels the model and tool work it started."""
        bind(task_id=task.id, run_id=run_id)
        cancel = CancelToken(self._deadline(context))
        pipeline = self._pipeline()
        try:
            async with self._slot():
                async for event in pipeline.stream(task, execute=execute, n=n, cancel=cancel, run_id=run_id):
                    if isinstance(event, SolveResult):
                        self.metrics.record_result(event)
                        _log_task(event)
                        if event.run is not None and event.run.interrupted and cancel.is_cancelled():
                            raise Cancelled(f"task {task.id}: {event.run.error}")
                    yield event
        except asyncio.CancelledError:
            cancel.cancel()
            raise
        except Cancelled as exc:
            raise TaskFailed(grpc.StatusCode.DEADLINE_EXCEEDED, str(exc)) from None
        except ModelError as exc:
            raise TaskFailed(grpc.StatusCode.UNAVAILABLE, f"model back-end failed: {exc}") from None
        except StoreUnavailable as exc:
            raise bank_unreachable(exc) from None
        except TaskFailed:
            raise
        except Exception:  # a bug, not the task's doing: logged whole, told without its text (host paths)
            log.exception(json.dumps({"event": "task_crashed", "task_id": task.id, "run_id": run_id}))
            raise TaskFailed(grpc.StatusCode.INTERNAL, f"task {task.id}: the server failed on it; "
                                                       f"its log says why (run {run_id})") from None

    async def _run(self, context, task, run_id: str, n: int) -> AsyncIterator[pb.SolveEvent]:
        async for event in self._events(context, task, run_id, execute=True, n=n):
            yield event_to_proto(event, run_id)

    async def _recorded(self, run_id: str) -> pb.SolveEvent | None:
        """The result of the run recorded under `run_id` in the bank, or None."""
        try:
            found = await asyncio.to_thread(recorded_run, self._pipeline().bank, run_id)
        except StoreUnavailable as exc:
            raise bank_unreachable(exc) from None
        return None if found is None else pb.SolveEvent(run_id=run_id, result=recorded_to_proto(found))

    # --- RPCs ------------------------------------------------------------------------------
    async def Synthesize(self, request, context):
        with self._rpc("Synthesize", context):
            try:
                n = check_n(request.n)
                if not request.tasks:
                    raise RequestError("tasks", "at least one task is required")
                tasks = [task_from_proto(t, f"tasks[{i}]") for i, t in enumerate(request.tasks)]
            except RequestError as exc:
                await self._invalid(context, exc)
            response = pb.SynthesizeResponse()
            try:
                with self._admitted():
                    for task in tasks:
                        async for event in self._events(context, task, new_run_id(), execute=False, n=n):
                            if isinstance(event, SolveResult):
                                response.results.append(synthesis_to_proto(event))
            except TaskFailed as exc:
                await context.abort(exc.code, str(exc))
            return response

    async def Solve(self, request, context):
        with self._rpc("Solve", context):
            try:
                n = check_n(request.n)
                task = task_from_proto(request.task)
                named = check_request_id(request.request_id)
            except RequestError as exc:
                await self._invalid(context, exc)
            run_id = named or new_run_id()
            bind(task_id=task.id, run_id=run_id)
            try:
                with self._admitted():
                    start = functools.partial(self._run, context, task, run_id, n)
                    async for event in self.solves.follow(run_id, bool(named), start):
                        yield event
            except TaskFailed as exc:
                await context.abort(exc.code, str(exc))

    async def StreamTasks(self, request_iterator, context):
        """Tasks are taken one at a time: the next request is read only when the previous task is
        done and the bank has learned from it, so a fast producer is held back by flow control."""
        with self._rpc("StreamTasks", context):
            try:
                with self._admitted():
                    async for response in self._stream(request_iterator, context):
                        yield response
            except TaskFailed as exc:  # refused: the tasks' own failures are responses
                await context.abort(exc.code, str(exc))

    async def _stream(self, request_iterator, context) -> AsyncIterator[pb.StreamTasksResponse]:
        sequence = 0
        async for request in request_iterator:
            try:
                n = check_n(request.n)
                task = task_from_proto(request.task, f"task #{sequence}")
                named = check_request_id(request.request_id, f"task #{sequence}.request_id")
            except RequestError as exc:
                yield pb.StreamTasksResponse(
                    sequence=sequence, task_id=request.task.id,
                    error=status_of(grpc.StatusCode.INVALID_ARGUMENT, str(exc), exc.violations))
                sequence += 1
                continue
            result, run_id = None, named or new_run_id()
            bind(task_id=task.id, run_id=run_id)
            try:
                start = functools.partial(self._run, context, task, run_id, n)
                async for event in self.solves.follow(run_id, bool(named), start):
                    if event.HasField("result"):
                        result = event.result
            except TaskFailed as exc:  # one failed task does not end the stream
                yield pb.StreamTasksResponse(sequence=sequence, task_id=task.id, run_id=run_id,
                                             error=status_of(exc.code, str(exc)))
            else:
                yield pb.StreamTasksResponse(sequence=sequence, task_id=task.id, run_id=run_id, result=result)
            sequence += 1

    async def ReportOutcome(self, request, context):
        """By run_id: an outcome of that run. Free-form: of harness_id, run elsewhere on task_text."""
        with self._rpc("ReportOutcome", context):
            pipeline = await self._ready(context)
            if not request.HasField("reward"):
                await self._invalid(context, RequestError("reward", "required: a number in [0, 1]"))
            optional = {name: getattr(request, name) if request.HasField(name) else None
                        for name in ("prompt_tokens", "completion_tokens", "wall_s")}
            report = Report(request.reward, request.detail, **optional)
            bind(run_id=request.run_id)
            try:
                done = await pipeline.report_outcome(
                    report, run_id=request.run_id, harness_id=request.harness_id, task_text=request.task_text,
                    task_id=request.task_id, task_type=request.task_type or None, tags=tuple(request.tags))
            except FeedbackError as exc:
                violations = [(exc.field, exc.description)] if exc.kind == "invalid" else []
                await context.abort_with_status(rpc_status.to_status(
                    status_of(FEEDBACK_CODES[exc.kind], str(exc), violations)))
            log.info(json.dumps({"event": "report", "harness_id": done.harness_id, "cluster": done.cluster,
                                 "reward": request.reward, "promoted": done.decision.promote}))
            return pb.ReportOutcomeResponse(cluster=done.cluster, harness_id=done.harness_id,
                                            promoted=done.decision.promote, reason=done.decision.reason,
                                            incumbent_id=done.incumbent_id or "")

    async def GetHarness(self, request, context):
        with self._rpc("GetHarness", context):
            bank = (await self._ready(context)).bank
            if not request.id:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "id: required")
            try:
                return harness_to_proto(await asyncio.to_thread(bank.get, request.id))
            except BankError as exc:
                await context.abort(grpc.StatusCode.NOT_FOUND, clipped(str(exc)))

    async def ListHarnesses(self, request, context):
        with self._rpc("ListHarnesses", context):
            bank = (await self._ready(context)).bank
            if request.limit < 0 or request.offset < 0 or request.limit > 1000:
                await self._invalid(context, RequestError("limit", "0-1000 (0: 100)", ("offset", ">= 0")))
            if request.origin not in pb.Origin.values():
                await self._invalid(context, RequestError("origin", f"unknown value {request.origin}"))
            origin = enum_name(pb.Origin, "ORIGIN", request.origin) if request.origin else None
            rows = await asyncio.to_thread(bank.list_harnesses, origin, request.limit or 100, request.offset)
            return pb.ListHarnessesResponse(harnesses=[harness_to_proto(h) for h in rows])

    async def Lineage(self, request, context):
        with self._rpc("Lineage", context):
            bank = (await self._ready(context)).bank
            try:
                chain = await asyncio.to_thread(bank.lineage, request.id)
            except BankError as exc:
                await context.abort(grpc.StatusCode.NOT_FOUND, clipped(str(exc)))
            return pb.LineageResponse(chain=[harness_to_proto(h) for h in chain])

    async def Rollback(self, request, context):
        with self._rpc("Rollback", context):
            bank = (await self._ready(context)).bank
            if not request.cluster:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "cluster: required")
            try:
                done = await asyncio.to_thread(bank.rollback, request.cluster)
            except BankError as exc:
                await context.abort(grpc.StatusCode.FAILED_PRECONDITION, clipped(str(exc)))
            return pb.RollbackResponse(cluster=done.cluster, restored=done.restored, replaced=done.replaced)


def _log_task(result: SolveResult) -> None:
    run = result.run
    log.info(json.dumps({
        "event": "task", "task_id": result.task_id, "run_id": result.run_id, "route": result.route,
        "harness_id": result.harness.id, "cluster": result.cluster, "reward": run.reward if run else None,
        "passed": run.passed if run else None, "synthesis_tokens": result.synthesis_cost.synthesis.tokens,
        "repair_tokens": result.synthesis_cost.repair.tokens,
        "execution_tokens": run.cost.tokens if run else None, "wall_s": round(result.wall_s, 3),
        "error": run.error if run else None}))
