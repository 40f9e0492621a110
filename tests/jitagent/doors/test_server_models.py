"""The service with the real embedded model (SmolLM2-135M for speed) behind it."""

import asyncio
import time

import grpc
import pytest

from jitagent.harness.seeds import load_seeds
from jitagent.tasks.task import Task
from jitagent.v1 import jitagent_pb2 as pb

from .conftest import in_flight, running, until_idle

pytestmark = pytest.mark.slow


def test_solve_streams_events_as_they_happen(make_config):
    async def main():
        async with running(make_config(meta="smollm2-135m", dry_run=True)) as (server, client):
            task = Task(id="add", prompt="What is 21 + 21?", type="arithmetic",
                        verifier={"kind": "numeric", "expected": 42})
            kinds, stamps = [], []
            async for event in client.solve(task, n=2):
                kinds.append(event.WhichOneof("event"))
                stamps.append(time.monotonic())
                if event.HasField("result"):
                    result = event.result
            assert kinds[0] == "retrieved" and kinds[-1] == "result"
            for expected in ("candidate", "routed", "chosen", "step", "verdict", "bank"):
                assert expected in kinds
            order = [kinds.index(k) for k in ("candidate", "chosen", "step", "verdict")]
            assert order == sorted(order)
            assert stamps[-1] - stamps[0] > 0.05  # streamed over time, not in one burst at the end
            assert result.cost.HasField("completion_tokens") and result.cost.completion_tokens > 0
            assert result.synthesis.cost.synthesis.completion_tokens > 0 and result.bank_decision
    asyncio.run(main())


def test_deadline_exceeded_stops_the_work(make_config):
    async def main():
        async with running(make_config(meta="smollm2-135m")) as (server, client):
            start = time.monotonic()
            with pytest.raises(grpc.aio.AioRpcError) as err:
                async for _ in client.solve("Write a long essay about the history of bridges.", timeout=0.8):
                    pass
            assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
            assert await until_idle(server) == 0  # the server-side work stops soon after the deadline
            assert time.monotonic() - start < 15
            assert await client.health() == "SERVING"
    asyncio.run(main())


def test_cancellation_mid_stream_stops_the_work(make_config):
    async def main():
        async with running(make_config(meta="smollm2-135m")) as (server, client):
            call = client.solve("Write a long story about a lighthouse keeper and count its words.")
            first = await call.read()
            assert first.HasField("retrieved") and in_flight(server) == 1
            call.cancel()
            assert await until_idle(server) == 0
            assert await client.health() == "SERVING"
            assert len((await client.list_harnesses()).harnesses) >= len(load_seeds())
    asyncio.run(main())


def test_stream_of_20_tasks_carries_experience_forward(make_config):
    tasks = [Task(id=f"s{i}", prompt=f"What is {i + 3} * 7? Answer with the number.", type="multiply",
                  verifier={"kind": "numeric", "expected": (i + 3) * 7}) for i in range(20)]

    async def main():
        async with running(make_config(meta="smollm2-135m")) as (server, client):
            responses = [r async for r in client.stream(tasks, n=1)]
            assert [r.sequence for r in responses] == list(range(20))
            assert all(r.HasField("result") and not r.result.error for r in responses)
            assert all(arm.runs == 0 for arm in responses[0].result.synthesis.arms)
            # later tasks route on what earlier tasks stored: an arm with runs in the cluster runs, and
            # fewer syntheses
            routes = [r.result.route for r in responses]
            assert any(route in (pb.ROUTE_EXPLOIT, pb.ROUTE_EXPLORE) for route in routes[5:])
            synthesized = [route in (pb.ROUTE_SYNTHESIZED, pb.ROUTE_FALLBACK) for route in routes]
            assert synthesized[0] and sum(synthesized[10:]) <= sum(synthesized[:10])  # the share decays
            stats = server.solving.pipeline.bank.stats()
            assert stats["outcomes"] == 20
    asyncio.run(main())
