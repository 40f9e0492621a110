"""A small async Python client for the jitagent gRPC service."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from jitagent.tasks import Task
from jitagent.v1 import jitagent_pb2 as pb
from jitagent.v1 import jitagent_pb2_grpc as pb_grpc

DEFAULT_ADDRESS = "127.0.0.1:50051"


def task_to_proto(task: Task | str) -> pb.Task:
    if isinstance(task, str):
        return pb.Task(prompt=task)
    v = task.verifier
    verifier = pb.Verifier(kind=v.kind, expected="" if v.expected is None else str(v.expected), tolerance=v.tolerance,
                           pattern=v.pattern or "", tests=v.tests or "", command=v.command or "",
                           case_sensitive=v.case_sensitive)
    return pb.Task(id=task.id, prompt=task.prompt, type=task.type or "", tags=task.tags, tools=task.tools or [],
                   files=task.files, verifier=verifier, public_tests=task.public_tests or "")


class JitAgentClient:
    def __init__(self, address: str = DEFAULT_ADDRESS, token: str | None = None, tls_ca: bytes | None = None,
                 max_message_mb: int = 4):
        options = [("grpc.max_receive_message_length", max_message_mb << 20),
                   ("grpc.max_send_message_length", max_message_mb << 20)]
        if tls_ca is not None:
            self.channel = grpc.aio.secure_channel(address, grpc.ssl_channel_credentials(tls_ca), options=options)
        else:
            self.channel = grpc.aio.insecure_channel(address, options=options)
        self.stub = pb_grpc.JitAgentStub(self.channel)
        self.metadata = (("authorization", f"Bearer {token}"),) if token else ()

    async def close(self) -> None:
        await self.channel.close()

    async def __aenter__(self) -> JitAgentClient:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def health(self, service: str = "", timeout: float = 5.0) -> str:
        stub = health_pb2_grpc.HealthStub(self.channel)
        reply = await stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=timeout)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)

    async def wait_ready(self, timeout: float = 120.0) -> None:
        import asyncio
        import time

        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                if await self.health() == "SERVING":
                    return
            except grpc.aio.AioRpcError:
                pass
            await asyncio.sleep(0.2)
        raise TimeoutError(f"server not SERVING after {timeout}s")

    async def synthesize(self, tasks: list[Task | str], n: int = 0, timeout: float | None = None) -> pb.SynthesizeResponse:
        request = pb.SynthesizeRequest(tasks=[task_to_proto(t) for t in tasks], n=n)
        return await self.stub.Synthesize(request, timeout=timeout, metadata=self.metadata)

    def solve(self, task: Task | str, n: int = 0, timeout: float | None = None):
        """Server stream of SolveEvents; iterate with `async for` (cancel() on the call stops the work)."""
        return self.stub.Solve(pb.SolveRequest(task=task_to_proto(task), n=n), timeout=timeout, metadata=self.metadata)

    async def stream(self, tasks: AsyncIterable[Task] | list[Task], n: int = 0,
                     timeout: float | None = None) -> AsyncIterator[pb.StreamTasksResponse]:
        async def requests():
            if isinstance(tasks, list):
                for t in tasks:
                    yield pb.StreamTasksRequest(task=task_to_proto(t), n=n)
            else:
                async for t in tasks:
                    yield pb.StreamTasksRequest(task=task_to_proto(t), n=n)
        async for response in self.stub.StreamTasks(requests(), timeout=timeout, metadata=self.metadata):
            yield response

    async def report_outcome(self, harness_id: str, task_text: str, reward: float, *, task_id: str = "",
                             task_type: str = "", prompt_tokens: int | None = None, completion_tokens: int | None = None,
                             wall_s: float = 0.0, verdict: str = "") -> pb.ReportOutcomeResponse:
        request = pb.ReportOutcomeRequest(harness_id=harness_id, task_id=task_id, task_text=task_text, task_type=task_type,
                                          reward=reward, wall_s=wall_s, verdict=verdict)
        if prompt_tokens is not None:
            request.prompt_tokens = prompt_tokens
        if completion_tokens is not None:
            request.completion_tokens = completion_tokens
        return await self.stub.ReportOutcome(request, metadata=self.metadata)

    async def get_harness(self, harness_id: str) -> pb.Harness:
        return await self.stub.GetHarness(pb.GetHarnessRequest(id=harness_id), metadata=self.metadata)

    async def list_harnesses(self, origin: str = "", limit: int = 0, offset: int = 0) -> pb.ListHarnessesResponse:
        return await self.stub.ListHarnesses(pb.ListHarnessesRequest(origin=origin, limit=limit, offset=offset),
                                             metadata=self.metadata)

    async def lineage(self, harness_id: str) -> pb.LineageResponse:
        return await self.stub.Lineage(pb.LineageRequest(id=harness_id), metadata=self.metadata)

    async def rollback(self, cluster: str) -> pb.RollbackResponse:
        return await self.stub.Rollback(pb.RollbackRequest(cluster=cluster), metadata=self.metadata)
