"""The async Python client for the jitagent gRPC service (a sync one: jitagent.protocol.sdk.JitAgent)."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterable, AsyncIterator

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from jitagent import DEFAULT_ADDRESS
from jitagent.protocol.tasks import task_to_proto, verifier_to_proto
from jitagent.tasks.task import Task, VerifierSpec
from jitagent.v1 import jitagent_pb2 as pb
from jitagent.v1 import jitagent_pb2_grpc as pb_grpc

# The client's retry policy: a call that ends UNAVAILABLE (no server listening yet, a replica gone, a
# server still loading, its bank or model server unreachable) is tried again, up to 5 times in all with
# backoff; no other status is retried. gRPC retries a streaming call only until its first response has
# arrived; a Solve cut off later is retried by calling it again with the same request id (every Solve
# carries one), which returns the first run's result and never runs the task twice.
SERVICE_CONFIG = {"methodConfig": [{
    "name": [{"service": "jitagent.v1.JitAgent"}],
    "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.2s", "maxBackoff": "5s", "backoffMultiplier": 2,
                    "retryableStatusCodes": ["UNAVAILABLE"]}}]}


def channel_options(max_message_mb: int) -> list[tuple[str, int | str]]:
    return [("grpc.max_receive_message_length", max_message_mb << 20),
            ("grpc.max_send_message_length", max_message_mb << 20),
            ("grpc.enable_retries", 1), ("grpc.service_config", json.dumps(SERVICE_CONFIG))]


def new_request_id() -> str:
    return uuid.uuid4().hex


def report_request(run_id: str, reward: float, detail: str, prompt_tokens: int | None,
                   completion_tokens: int | None, wall_s: float | None, check: VerifierSpec | None = None,
                   **free_form) -> pb.ReportOutcomeRequest:
    request = pb.ReportOutcomeRequest(run_id=run_id, reward=reward, detail=detail, **free_form)
    if check is not None:
        request.check.CopyFrom(verifier_to_proto(check))
    for name, value in (("prompt_tokens", prompt_tokens), ("completion_tokens", completion_tokens),
                        ("wall_s", wall_s)):
        if value is not None:  # absent: unknown (or, for a run the server executed, its own measurement)
            setattr(request, name, value)
    return request


class JitAgentClient:
    """An async client: `async with JitAgentClient("host:port") as client: ...`.

    A task is a prompt string or a `jitagent.tasks.task.Task` (type, tags, files, verifier). Every result
    carries a `run_id`; `report_outcome(run_id, reward)` tells the server how a run went where it
    could not verify it. Calls raise `grpc.aio.AioRpcError` with the server's status (INVALID_ARGUMENT
    names the field, with google.rpc.BadRequest details). `token`: the server's bearer token;
    `tls_ca`: the PEM that signed the server's certificate (None: plaintext)."""

    def __init__(self, address: str = DEFAULT_ADDRESS, token: str | None = None, tls_ca: bytes | None = None,
                 max_message_mb: int = 4):
        options = channel_options(max_message_mb)
        if tls_ca is not None:
            self.channel = grpc.aio.secure_channel(address, grpc.ssl_channel_credentials(tls_ca),
                                                   options=options)
        else:
            self.channel = grpc.aio.insecure_channel(address, options=options)
        self.address = address
        self.stub = pb_grpc.JitAgentStub(self.channel)
        self.metadata = (("authorization", f"Bearer {token}"),) if token else ()

    async def close(self) -> None:
        await self.channel.close()

    async def __aenter__(self) -> JitAgentClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def health(self, service: str = "", timeout: float = 5.0) -> str:
        """SERVING once models and the bank are loaded; NOT_SERVING while loading or shutting down."""
        stub = health_pb2_grpc.HealthStub(self.channel)
        reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)

    async def wait_ready(self, timeout: float = 120.0) -> None:
        """Wait until the server is SERVING; TimeoutError after `timeout` seconds."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                if await self.health() == "SERVING":
                    return
            except grpc.aio.AioRpcError:
                pass
            await asyncio.sleep(0.2)
        raise TimeoutError(f"server at {self.address} not SERVING after {timeout}s")

    async def synthesize(self, tasks: list[Task | str], n: int = 0,
                         timeout: float | None = None) -> pb.SynthesizeResponse:
        """The harness the server would run for each task (route, candidates, cost); nothing executes.
        `n`: candidates per synthesis, 1-8 (0: the server's default)."""
        request = pb.SynthesizeRequest(tasks=[task_to_proto(t) for t in tasks], n=n)
        return await self.stub.Synthesize(request, timeout=timeout, metadata=self.metadata)

    def solve(
        self, task: Task | str, n: int = 0, timeout: float | None = None, request_id: str | None = None
    ):
        """Route, synthesize if need be, execute and verify one task: a stream of `SolveEvent`s, the
        last one the result. Iterate with `async for`; `cancel()` on the call stops the server's work.
        `request_id` (default: a new one) names the run: calling again with it returns that run's result."""
        request = pb.SolveRequest(task=task_to_proto(task), n=n, request_id=request_id or new_request_id())
        return self.stub.Solve(request, timeout=timeout, metadata=self.metadata)

    async def solve_result(
        self, task: Task | str, n: int = 0, timeout: float | None = None, request_id: str | None = None
    ) -> pb.SolveResult:
        """`solve`, waiting for the result only."""
        async for event in self.solve(task, n, timeout, request_id):
            if event.HasField("result"):
                return event.result
        raise RuntimeError("the server ended the Solve stream without a result")

    async def stream(
        self, tasks: AsyncIterable[Task] | list[Task], n: int = 0, timeout: float | None = None
    ) -> AsyncIterator[pb.StreamTasksResponse]:
        """Many tasks, one response each, in order; the bank learns from each before the next runs.
        A failed task's response carries `error` (a google.rpc.Status) and the stream goes on."""

        async def requests():
            if isinstance(tasks, list):
                for t in tasks:
                    yield pb.StreamTasksRequest(task=task_to_proto(t), n=n, request_id=new_request_id())
            else:
                async for t in tasks:
                    yield pb.StreamTasksRequest(task=task_to_proto(t), n=n, request_id=new_request_id())

        async for response in self.stub.StreamTasks(requests(), timeout=timeout, metadata=self.metadata):
            yield response

    async def report_outcome(self, run_id: str, reward: float, *, detail: str = "",
                             prompt_tokens: int | None = None, completion_tokens: int | None = None,
                             wall_s: float | None = None, check: VerifierSpec | None = None,
                             timeout: float | None = None) -> pb.ReportOutcomeResponse:
        """Feedback on a run (its `run_id` from any result): `reward` in [0, 1] and what was checked.
        Cost defaults to what the server measured; a run it did not execute (Synthesize) needs `wall_s`.
        One outcome like any other: one report never makes a harness the incumbent. A run takes one
        outcome (ALREADY_EXISTS after that, also when the server verified it itself). `check`: the check
        the reward came from, which a server practising failures may try the task again with."""
        request = report_request(run_id, reward, detail, prompt_tokens, completion_tokens, wall_s, check)
        return await self.stub.ReportOutcome(request, timeout=timeout, metadata=self.metadata)

    async def report_harness_outcome(self, harness_id: str, task_text: str, reward: float, *, wall_s: float,
                                     task_id: str = "", task_type: str = "", tags: tuple[str, ...] = (),
                                     detail: str = "", prompt_tokens: int | None = None,
                                     completion_tokens: int | None = None) -> pb.ReportOutcomeResponse:
        """Feedback on a harness run elsewhere (not through this server) on the task described here."""
        request = report_request("", reward, detail, prompt_tokens, completion_tokens, wall_s,
                                 harness_id=harness_id, task_id=task_id, task_text=task_text,
                                 task_type=task_type, tags=list(tags))
        return await self.stub.ReportOutcome(request, metadata=self.metadata)

    async def get_harness(self, harness_id: str) -> pb.Harness:
        return await self.stub.GetHarness(pb.GetHarnessRequest(id=harness_id), metadata=self.metadata)

    async def list_harnesses(self, origin: str = "", limit: int = 0,
                             offset: int = 0) -> pb.ListHarnessesResponse:
        """`origin`: seed | synthesized | repaired | evolved ("": all)."""
        request = pb.ListHarnessesRequest(origin=f"ORIGIN_{origin.upper()}" if origin else 0, limit=limit,
                                          offset=offset)
        return await self.stub.ListHarnesses(request, metadata=self.metadata)

    async def lineage(self, harness_id: str) -> pb.LineageResponse:
        """The harness and its ancestors, newest first."""
        return await self.stub.Lineage(pb.LineageRequest(id=harness_id), metadata=self.metadata)

    async def rollback(self, cluster: str) -> pb.RollbackResponse:
        """Restore the incumbent that the cluster's latest promotion replaced."""
        return await self.stub.Rollback(pb.RollbackRequest(cluster=cluster), metadata=self.metadata)
