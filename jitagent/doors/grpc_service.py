"""The JitAgent gRPC servicer: thin — parse, then the solving layer (jitagent.solving.layer), then
protobuf."""

from __future__ import annotations

import json
import logging
from contextlib import asynccontextmanager

import grpc
from google.protobuf import any_pb2
from google.rpc import error_details_pb2, status_pb2
from grpc_status import rpc_status

from jitagent.config.logs import bind
from jitagent.doors.metrics import Metrics
from jitagent.protocol.records import to_message
from jitagent.protocol.results import (
    event_to_proto,
    harness_to_proto,
    solve_result_to_proto,
    synthesis_to_proto,
)
from jitagent.protocol.tasks import RequestError, check_from_proto, enum_name, task_from_proto
from jitagent.solving.access import Caller
from jitagent.solving.feedback import Report
from jitagent.solving.layer import SolveError, Solving, deadline_in
from jitagent.v1 import jitagent_pb2 as pb
from jitagent.v1 import jitagent_pb2_grpc as pb_grpc

log = logging.getLogger("jitagent.server")


ENDINGS = {"DEADLINE_EXCEEDED": "the client's deadline passed; its work was stopped",
           "CANCELLED": "the client cancelled the call; its work was stopped"}


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


# What each kind of SolveError is on the wire.
STATUS = {"loading": grpc.StatusCode.UNAVAILABLE, "busy": grpc.StatusCode.RESOURCE_EXHAUSTED,
          "deadline": grpc.StatusCode.DEADLINE_EXCEEDED, "cancelled": grpc.StatusCode.CANCELLED,
          "model": grpc.StatusCode.UNAVAILABLE, "bank": grpc.StatusCode.UNAVAILABLE,
          "bad_request": grpc.StatusCode.INVALID_ARGUMENT, "not_found": grpc.StatusCode.NOT_FOUND,
          "conflict": grpc.StatusCode.ALREADY_EXISTS, "precondition": grpc.StatusCode.FAILED_PRECONDITION,
          "permission": grpc.StatusCode.PERMISSION_DENIED, "quota": grpc.StatusCode.RESOURCE_EXHAUSTED,
          "internal": grpc.StatusCode.INTERNAL}


def error_status(exc: SolveError) -> status_pb2.Status:
    return status_of(STATUS[exc.kind], str(exc), list(exc.violations))


def bad_request(exc: RequestError) -> SolveError:
    return SolveError("bad_request", str(exc), tuple(exc.violations))


class JitAgentService(pb_grpc.JitAgentServicer):
    """Each RPC: parse, then the solving layer; its events and results as protobuf."""

    def __init__(self, metrics: Metrics, solving: Solving):
        self.metrics = metrics
        self.solving = solving

    @asynccontextmanager
    async def _rpc(self, method: str, context):
        """Counted and timed; a refused call (a bad request, or what the solving layer refuses) aborts with
        its status; a call that does not end OK is logged with it."""
        call = None
        try:
            with self.metrics.track(method, context) as call:
                try:
                    yield
                except RequestError as exc:
                    await self._abort(context, bad_request(exc))
                except SolveError as exc:
                    await self._abort(context, exc)
        finally:
            if call is not None and call.code != "OK":
                error = context.details() or ENDINGS.get(call.code, "")
                log.warning(json.dumps({"event": "rpc_failed", "method": method, "code": call.code,
                                        "error": error[:500]}))

    @staticmethod
    async def _abort(context, exc: SolveError):
        await context.abort_with_status(rpc_status.to_status(error_status(exc)))

    def _caller(self, context) -> Caller:
        """Who calls, by the token the interceptor already let through (the same access)."""
        given = dict(context.invocation_metadata() or ()).get("authorization")
        caller = self.solving.access.caller(given)
        if caller is None:  # only when a call bypassed the interceptor
            raise SolveError("permission", "missing or invalid bearer token")
        return caller

    @staticmethod
    def _deadline(context) -> float | None:
        return deadline_in(context.time_remaining())

    # --- RPCs ------------------------------------------------------------------------------
    async def Synthesize(self, request, context):
        async with self._rpc("Synthesize", context):
            response = pb.SynthesizeResponse()
            n = self.solving.candidates(request.n)
            if not request.tasks:
                raise RequestError("tasks", "at least one task is required")
            tasks = [task_from_proto(t, f"tasks[{i}]") for i, t in enumerate(request.tasks)]
            caller = self._caller(context)
            with self.solving.admitted(caller, len(tasks)):
                for task in tasks:
                    run_id, _ = self.solving.name_run("", caller)
                    result = await self.solving.solve(task, execute=False, n=n, run_id=run_id, caller=caller,
                                                      deadline=self._deadline(context))
                    response.results.append(synthesis_to_proto(result))
            return response

    async def Solve(self, request, context):
        async with self._rpc("Solve", context):
            n = self.solving.candidates(request.n)
            task = task_from_proto(request.task)
            caller = self._caller(context)
            run_id, replay = self.solving.name_run(request.request_id, caller)
            bind(task_id=task.id, run_id=run_id)
            with self.solving.admitted(caller):
                async for event in self.solving.events(task, run_id=run_id, replay=replay, n=n, caller=caller,
                                                       deadline=self._deadline(context)):
                    yield event_to_proto(event, run_id)

    async def StreamTasks(self, request_iterator, context):
        """Tasks are taken one at a time: the next request is read only when the previous task is
        done and the bank has learned from it, so a fast producer is held back by flow control. A
        task's own failure is a response; the stream goes on (only a refused stream ends it)."""
        async with self._rpc("StreamTasks", context):
            caller = self._caller(context)
            with self.solving.admitted(caller):
                sequence = 0
                async for request in request_iterator:
                    yield await self._one_of_stream(request, sequence, caller, context)
                    sequence += 1

    async def _one_of_stream(self, request, sequence: int, caller: Caller,
                             context) -> pb.StreamTasksResponse:
        answer = pb.StreamTasksResponse(sequence=sequence, task_id=request.task.id)
        try:
            n = self.solving.candidates(request.n, f"task #{sequence}.n")
            task = task_from_proto(request.task, f"task #{sequence}")
            answer.run_id, replay = self.solving.name_run(request.request_id, caller,
                                                          f"task #{sequence}.request_id")
            answer.task_id = task.id
            bind(task_id=task.id, run_id=answer.run_id)
            result = await self.solving.solve(task, run_id=answer.run_id, replay=replay, n=n, caller=caller,
                                              deadline=self._deadline(context))
        except RequestError as exc:
            answer.error.CopyFrom(error_status(bad_request(exc)))
        except SolveError as exc:
            answer.error.CopyFrom(error_status(exc))
        else:
            answer.result.CopyFrom(solve_result_to_proto(result))
        return answer

    async def ReportOutcome(self, request, context):
        """By run_id: an outcome of that run. Free-form: of harness_id, run elsewhere on task_text."""
        async with self._rpc("ReportOutcome", context):
            if not request.HasField("reward"):
                raise RequestError("reward", "required: a number in [0, 1]")
            optional = {name: getattr(request, name) if request.HasField(name) else None
                        for name in ("prompt_tokens", "completion_tokens", "wall_s")}
            bind(run_id=request.run_id)
            done = await self.solving.report(
                Report(request.reward, request.detail, **optional), self._caller(context),
                run_id=request.run_id, harness_id=request.harness_id, task_text=request.task_text,
                task_id=request.task_id, task_type=request.task_type or None, tags=tuple(request.tags),
                check=check_from_proto(request.check, "check") if request.HasField("check") else None)
            return to_message(done.reported(), pb.ReportOutcomeResponse())

    async def GetHarness(self, request, context):
        async with self._rpc("GetHarness", context):
            return harness_to_proto(await self.solving.harness(request.id, self._caller(context)))

    async def ListHarnesses(self, request, context):
        async with self._rpc("ListHarnesses", context):
            if request.origin not in pb.Origin.values():
                raise RequestError("origin", f"unknown value {request.origin}")
            origin = enum_name(pb.Origin, request.origin) if request.origin else None
            rows = await self.solving.harnesses(origin, request.limit, request.offset,
                                                self._caller(context))
            return pb.ListHarnessesResponse(harnesses=[harness_to_proto(h) for h in rows])

    async def Lineage(self, request, context):
        async with self._rpc("Lineage", context):
            chain = await self.solving.lineage(request.id, self._caller(context))
            return pb.LineageResponse(chain=[harness_to_proto(h) for h in chain])

    async def Rollback(self, request, context):
        async with self._rpc("Rollback", context):
            done = await self.solving.rollback(request.cluster, self._caller(context))
            return pb.RollbackResponse(cluster=done.cluster, restored=done.restored, replaced=done.replaced)
