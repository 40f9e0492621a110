"""The JitAgent gRPC servicer: thin — parse, admit to a bounded queue, call the pipeline, stream."""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from contextlib import asynccontextmanager

import grpc

from harness_bank import Outcome
from harness_bank.bank import BankError
from jitagent.models.base import CancelToken, Cancelled, ModelError
from jitagent.pipeline import JitPipeline
from jitagent.server.convert import (RequestError, check_n, harness_to_proto, solve_result_to_proto,
                                     synthesis_to_proto, task_from_proto)
from jitagent.server.metrics import Metrics
from jitagent.v1 import jitagent_pb2 as pb
from jitagent.v1 import jitagent_pb2_grpc as pb_grpc

log = logging.getLogger("jitagent.server")


class TaskFailed(Exception):
    """A task that could not finish, with the status code that says why."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code


class JitAgentService(pb_grpc.JitAgentServicer):
    def __init__(self, metrics: Metrics, concurrency: int, max_queue: int):
        self.pipeline: JitPipeline | None = None  # set once models and the bank are loaded
        self.load_error: str | None = None  # why they could not be
        self.metrics = metrics
        self.slots = asyncio.Semaphore(concurrency)
        self.max_queue = max_queue
        self.waiting = 0

    # --- plumbing --------------------------------------------------------------------------
    async def _ready(self, context) -> JitPipeline:
        if self.load_error is not None:
            await context.abort(grpc.StatusCode.UNAVAILABLE, f"the server could not start: {self.load_error}")
        if self.pipeline is None:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "loading models and the harness bank; retry shortly")
        return self.pipeline

    @asynccontextmanager
    async def _slot(self, context):
        """Bounded concurrency; past `max_queue` waiting tasks the server says RESOURCE_EXHAUSTED
        instead of buffering without limit."""
        if self.slots.locked() and self.waiting >= self.max_queue:
            await context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                f"queue full: {self.waiting} tasks waiting (max_queue {self.max_queue}); retry later")
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

    async def _events(self, context, task, *, execute: bool, n: int):
        """Pipeline events for one task; a cancelled RPC cancels the model and tool work it started."""
        cancel = CancelToken(self._deadline(context))
        pipeline = await self._ready(context)
        try:
            async with self._slot(context):
                async for event in pipeline.stream(task, execute=execute, n=n, cancel=cancel):
                    if event.kind == "result":
                        result = event.data["result"]
                        self.metrics.record_result(result)
                        _log_task(result)
                        if result.run is not None and result.run.interrupted and cancel.is_cancelled():
                            raise Cancelled(f"task {task.id}: {result.run.error}")
                    yield event
        except asyncio.CancelledError:
            cancel.cancel()
            raise
        except Cancelled as exc:
            raise TaskFailed(grpc.StatusCode.DEADLINE_EXCEEDED, str(exc)) from None
        except ModelError as exc:
            raise TaskFailed(grpc.StatusCode.UNAVAILABLE, f"model back-end failed: {exc}") from None

    async def _bad_request(self, context, exc: Exception):
        await context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))

    # --- RPCs ------------------------------------------------------------------------------
    async def Synthesize(self, request, context):
        with self.metrics.track("Synthesize", context):
            try:
                n = check_n(request.n)
                if not request.tasks:
                    raise RequestError("tasks: at least one task is required")
                tasks = [task_from_proto(t, f"tasks[{i}]") for i, t in enumerate(request.tasks)]
            except RequestError as exc:
                await self._bad_request(context, exc)
            response = pb.SynthesizeResponse()
            try:
                for task in tasks:
                    async for event in self._events(context, task, execute=False, n=n):
                        if event.kind == "result":
                            response.results.append(synthesis_to_proto(event.data["result"]))
            except TaskFailed as exc:
                await context.abort(exc.code, str(exc))
            return response

    async def Solve(self, request, context):
        with self.metrics.track("Solve", context):
            try:
                n = check_n(request.n)
                task = task_from_proto(request.task)
            except RequestError as exc:
                await self._bad_request(context, exc)
            try:
                async for event in self._events(context, task, execute=True, n=n):
                    yield _event_to_proto(event)
            except TaskFailed as exc:
                await context.abort(exc.code, str(exc))

    async def StreamTasks(self, request_iterator, context):
        """Tasks are taken one at a time: the next request is read only when the previous task is
        done and the bank has learned from it, so a fast producer is held back by flow control."""
        with self.metrics.track("StreamTasks", context):
            sequence = 0
            async for request in request_iterator:
                try:
                    n = check_n(request.n)
                    task = task_from_proto(request.task, f"task #{sequence}")
                except RequestError as exc:
                    yield pb.StreamTasksResponse(sequence=sequence, task_id=request.task.id, error=f"INVALID_ARGUMENT: {exc}")
                    sequence += 1
                    continue
                result = None
                try:
                    async for event in self._events(context, task, execute=True, n=n):
                        if event.kind == "result":
                            result = event.data["result"]
                except TaskFailed as exc:  # one failed task does not end the stream
                    yield pb.StreamTasksResponse(sequence=sequence, task_id=task.id, error=f"{exc.code.name}: {exc}")
                else:
                    yield pb.StreamTasksResponse(sequence=sequence, task_id=task.id, result=solve_result_to_proto(result),
                                                 error=(result.run.error or "") if result.run else "")
                sequence += 1

    async def ReportOutcome(self, request, context):
        with self.metrics.track("ReportOutcome", context):
            pipeline = await self._ready(context)
            problems = []
            if not request.harness_id:
                problems.append("harness_id: required")
            if not request.task_text.strip():
                problems.append("task_text: must not be empty")
            if not 0.0 <= request.reward <= 1.0:  # NaN fails this too
                problems.append(f"reward: must be in [0, 1], got {request.reward}")
            if not (math.isfinite(request.wall_s) and request.wall_s >= 0):
                problems.append(f"wall_s: must be a finite number >= 0, got {request.wall_s}")
            for name in ("prompt_tokens", "completion_tokens"):
                if request.HasField(name) and getattr(request, name) < 0:
                    problems.append(f"{name}: must not be negative")
            if problems:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "; ".join(problems))
            outcome = Outcome(
                harness_id=request.harness_id, task_id=request.task_id or "external", task_text=request.task_text,
                reward=request.reward,
                prompt_tokens=request.prompt_tokens if request.HasField("prompt_tokens") else None,
                completion_tokens=request.completion_tokens if request.HasField("completion_tokens") else None,
                wall_s=request.wall_s, verdict=request.verdict, task_type=request.task_type or None,
                tags=tuple(request.tags), source="feedback")
            bank = pipeline.bank
            try:
                await asyncio.to_thread(bank.get, request.harness_id)
            except BankError as exc:
                await context.abort(grpc.StatusCode.NOT_FOUND, str(exc))
            cluster = await asyncio.to_thread(bank.cluster_for, outcome.task_text, outcome.task_type, outcome.tags)
            outcome.cluster = cluster
            decision = await asyncio.to_thread(bank.record_outcome, outcome)
            incumbent = await asyncio.to_thread(bank.incumbent, cluster)
            return pb.ReportOutcomeResponse(cluster=cluster, promoted=decision.promote, reason=decision.reason,
                                            incumbent_id=incumbent["harness_id"] if incumbent else "")

    async def GetHarness(self, request, context):
        with self.metrics.track("GetHarness", context):
            bank = (await self._ready(context)).bank
            if not request.id:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "id: required")
            try:
                return harness_to_proto(await asyncio.to_thread(bank.get, request.id))
            except BankError as exc:
                await context.abort(grpc.StatusCode.NOT_FOUND, str(exc))

    async def ListHarnesses(self, request, context):
        with self.metrics.track("ListHarnesses", context):
            bank = (await self._ready(context)).bank
            if request.limit < 0 or request.offset < 0 or request.limit > 1000:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "limit: 0-1000 (0: 100); offset: >= 0")
            rows = await asyncio.to_thread(bank.list_harnesses, request.origin or None, request.limit or 100, request.offset)
            return pb.ListHarnessesResponse(harnesses=[harness_to_proto(h) for h in rows])

    async def Lineage(self, request, context):
        with self.metrics.track("Lineage", context):
            bank = (await self._ready(context)).bank
            try:
                chain = await asyncio.to_thread(bank.lineage, request.id)
            except BankError as exc:
                await context.abort(grpc.StatusCode.NOT_FOUND, str(exc))
            return pb.LineageResponse(chain=[harness_to_proto(h) for h in chain])

    async def Rollback(self, request, context):
        with self.metrics.track("Rollback", context):
            bank = (await self._ready(context)).bank
            if not request.cluster:
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "cluster: required")
            try:
                done = await asyncio.to_thread(bank.rollback, request.cluster)
            except BankError as exc:
                await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
            return pb.RollbackResponse(cluster=done["cluster"], restored=done["restored"], replaced=done["replaced"])


def _event_to_proto(event) -> pb.SolveEvent:
    msg = pb.SolveEvent(kind=event.kind, text=event.text[:20000])
    if event.step is not None:
        msg.step_kind, msg.tool, msg.ok = event.step.kind, event.step.tool or "", event.step.ok
    elif "ok" in event.data:
        msg.ok = bool(event.data["ok"])
    if event.kind == "result":
        msg.result.CopyFrom(solve_result_to_proto(event.data["result"]))
    return msg


def _log_task(result) -> None:
    run = result.run
    log.info(json.dumps({
        "event": "task", "task_id": result.task_id, "route": result.route, "harness_id": result.harness.id,
        "cluster": result.cluster, "reward": run.reward if run else None, "passed": run.passed if run else None,
        "synthesis_tokens": result.synthesis_cost.synthesis.tokens, "repair_tokens": result.synthesis_cost.repair.tokens,
        "execution_tokens": run.cost.tokens if run else None, "wall_s": round(result.wall_s, 3),
        "error": run.error if run else None}))
