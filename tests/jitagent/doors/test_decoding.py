"""Request bytes that are not the method's message get INVALID_ARGUMENT, on every kind of RPC."""

import asyncio

import grpc
import pytest

from jitagent.doors.server import JitAgentServer

GARBAGE = b"\xff\xff\xff\xff\x0f"


async def call_with_garbage(channel, method: str, kind: str):
    identity = {"request_serializer": lambda b: b, "response_deserializer": lambda b: b}
    if kind == "unary_unary":
        return await channel.unary_unary(method, **identity)(GARBAGE)
    if kind == "unary_stream":
        return [r async for r in channel.unary_stream(method, **identity)(GARBAGE)]
    if kind == "stream_unary":
        return await channel.stream_unary(method, **identity)(iter([GARBAGE]))
    return [r async for r in channel.stream_stream(method, **identity)(iter([GARBAGE]))]


def test_undecodable_requests_are_invalid_argument_naming_the_message(make_config):
    methods = [("/jitagent.v1.JitAgent/GetHarness", "unary_unary", "jitagent.v1.GetHarnessRequest"),
               ("/jitagent.v1.JitAgent/Solve", "unary_stream", "jitagent.v1.SolveRequest"),
               ("/jitagent.v1.JitAgent/StreamTasks", "stream_stream", "jitagent.v1.StreamTasksRequest"),
               ("/grpc.health.v1.Health/Check", "unary_unary", "grpc.health.v1.HealthCheckRequest")]

    async def main():
        server = JitAgentServer(make_config(), build=lambda config: None)
        port = await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                for method, kind, message in methods:
                    with pytest.raises(grpc.aio.AioRpcError) as err:
                        await call_with_garbage(channel, method, kind)
                    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
                    assert message in err.value.details()
        finally:
            await server.stop()
    asyncio.run(main())
