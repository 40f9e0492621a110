"""Retrying a call is safe (a request id names its run: one run however often it is asked for), the
client's channel retries what is worth retrying, and a replica refuses what it cannot take at once."""

import asyncio
import threading

import grpc
import pytest

from jitagent.doors.server import pipeline_for
from jitagent.protocol.results import event_to_proto
from jitagent.protocol.tasks import task_to_proto
from jitagent.tasks.task import Task
from jitagent.v1 import jitagent_pb2 as pb

from .conftest import running

TASK = Task(id="add", prompt="What is 2 + 3?", verifier={"kind": "numeric", "expected": 0})


def runs_in(server, task_id: str) -> int:
    return server.solving.pipeline.bank.store.query("SELECT COUNT(*) FROM runs WHERE task_id = ?",
                                                    (task_id,))[0][0]


def test_a_retried_solve_gets_the_first_runs_result_from_memory_then_from_the_bank(make_config):
    config = make_config()

    async def first():
        async with running(config) as (server, client):
            result = await client.solve_result(TASK, request_id="job-1")
            again = await client.solve_result(TASK, request_id="job-1")
            assert again == result and result.run_id == "job-1" and runs_in(server, "add") == 1
            return result

    async def after_a_restart():
        async with running(config) as (server, client):
            replayed = await client.solve_result(TASK, request_id="job-1")
            assert runs_in(server, "add") == 1 and server.solving.finished == {}
            fresh = await client.solve_result(TASK)  # no id given: a new one, so a new run
            assert fresh.run_id != "job-1" and runs_in(server, "add") == 2
            return replayed

    result = asyncio.run(first())
    replayed = asyncio.run(after_a_restart())
    assert replayed.run_id == "job-1" and replayed.harness_id == result.harness_id
    assert (replayed.route, replayed.cluster) == (result.route, result.cluster)
    assert (replayed.answer, replayed.passed, replayed.reward, replayed.verdict) == (
        result.answer, result.passed, result.reward, result.verdict)
    assert replayed.cost == result.cost
    if result.HasField("synthesis"):  # what a synthesis cost is not kept: unknown, not 0
        assert not replayed.total_cost.HasField("prompt_tokens") and not replayed.HasField("synthesis")
    else:  # nothing was synthesized: the run's cost is the whole solve's
        assert replayed.total_cost.prompt_tokens == result.total_cost.prompt_tokens


def test_a_retry_while_the_first_call_runs_follows_that_run(make_config):
    async def main():
        async with running(make_config()) as (server, client):
            await server.solving.slots.acquire()  # the run waits for a slot: both calls are open at once
            first = asyncio.create_task(client.solve_result(TASK, request_id="job-2"))
            while "job-2" not in server.solving.running:
                await asyncio.sleep(0.01)
            run = server.solving.running["job-2"]
            events = client.solve(TASK, request_id="job-2")
            second = asyncio.create_task(anext(aiter(events)))
            while run.followers < 2:
                await asyncio.sleep(0.01)
            server.solving.slots.release()
            seen = [await second] + [event async for event in events]
            # the retry saw the run from its first event
            assert seen == [event_to_proto(event, "job-2") for event in run.events]
            assert seen[-1].result == await first and runs_in(server, "add") == 1
    asyncio.run(main())


def test_a_run_is_cancelled_when_the_last_call_following_it_goes(make_config):
    async def main():
        async with running(make_config()) as (server, client):
            await server.solving.slots.acquire()
            call = client.solve(TASK, request_id="job-3")
            waiting = asyncio.create_task(anext(aiter(call)))
            while "job-3" not in server.solving.running:
                await asyncio.sleep(0.01)
            run = server.solving.running["job-3"]
            call.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            while not run.task.done():
                await asyncio.sleep(0.01)
            assert run.task.cancelled() and "job-3" not in server.solving.running
            server.solving.slots.release()
            result = await client.solve_result(TASK, request_id="job-3")  # nothing recorded: it runs anew
            assert result.run_id == "job-3" and runs_in(server, "add") == 1
    asyncio.run(main())


def test_a_bad_request_id_is_invalid_argument_naming_it(make_config):
    async def main():
        async with running(make_config()) as (server, client):
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await client.solve_result(TASK, request_id="no spaces/please")
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert err.value.details().startswith("request_id: 1-128 characters")
            replies = [r async for r in client.stub.StreamTasks(iter([
                pb.StreamTasksRequest(task=pb.Task(prompt="x"), request_id="x" * 129)]))]
            assert replies[0].error.message.startswith("task #0.request_id: 1-128 characters")
    asyncio.run(main())


def test_a_task_sent_again_in_a_stream_under_its_id_is_not_run_twice(make_config):
    async def main():
        async with running(make_config()) as (server, client):
            request = pb.StreamTasksRequest(task=task_to_proto(TASK), request_id="job-4")
            replies = [r async for r in client.stub.StreamTasks(iter([request, request]))]
            assert [r.run_id for r in replies] == ["job-4", "job-4"]
            assert replies[0].result == replies[1].result and runs_in(server, "add") == 1
    asyncio.run(main())


def test_past_max_concurrent_solves_a_call_is_refused_at_once(make_config):
    async def main():
        async with running(make_config(max_concurrent=2)) as (server, client):
            await server.solving.slots.acquire()  # the open solves wait: they stay open
            open_calls = [asyncio.create_task(client.solve_result(TASK)) for _ in range(2)]
            while server.solving.open_solves < 2:
                await asyncio.sleep(0.01)
            for refused in (client.solve_result(TASK), client.synthesize(["x"]),
                            anext(aiter(client.stream([TASK])))):
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await asyncio.wait_for(refused, 5)
                assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert "limit (--max-concurrent 2); retry later or on another replica" in err.value.details()
            server.solving.slots.release()
            assert all(r.HasField("reward") for r in await asyncio.gather(*open_calls))
            assert server.solving.open_solves == 0
    asyncio.run(main())


def test_the_client_retries_a_server_that_is_still_loading(make_config):
    """UNAVAILABLE is retried by the channel's service config, with backoff: a call made while the
    server loads succeeds once it is ready, with no retry loop in the caller."""
    config, gate = make_config(), threading.Event()
    built = pipeline_for(config)

    def slow_build(_):
        gate.wait(30)
        return built

    async def main():
        async with running(config, build=slow_build) as (server, client):
            call = asyncio.create_task(client.solve_result(TASK, request_id="job-5"))
            refused = server.metrics.requests.labels("Solve", "UNAVAILABLE")
            while refused._value.get() < 1:
                await asyncio.sleep(0.005)
            gate.set()
            assert (await asyncio.wait_for(call, 30)).run_id == "job-5"
    asyncio.run(main())


def test_two_replicas_that_run_one_id_at_once_record_it_once_and_answer_alike(make_config, postgres_url,
                                                                               tmp_path):
    configs = [make_config(bank=postgres_url).model_copy(update={"data_dir": tmp_path / f"replica{r}"})
               for r in range(2)]

    async def main():
        async with running(configs[0]) as (a, to_a), running(configs[1]) as (b, to_b):
            for server in (a, b):
                await server.solving.slots.acquire()  # both runs start before either is recorded
            calls = [asyncio.create_task(c.solve_result(TASK, request_id="job-6")) for c in (to_a, to_b)]
            while any("job-6" not in server.solving.running for server in (a, b)):
                await asyncio.sleep(0.01)
            for server in (a, b):
                server.solving.slots.release()
            first, second = await asyncio.gather(*calls)
            assert first.run_id == second.run_id == "job-6"
            assert (first.answer, first.reward) == (second.answer, second.reward)
            assert runs_in(a, "add") == 1
            outcomes = a.solving.pipeline.bank.store.query("SELECT COUNT(*) FROM outcomes WHERE run_id = ?",
                                                           ("job-6",))
            assert outcomes[0][0] == 1
    asyncio.run(main())
