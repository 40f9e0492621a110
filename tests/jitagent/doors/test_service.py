"""Bad input over the network gets INVALID_ARGUMENT naming the field, stores nothing, leaks nothing."""

import asyncio

import grpc
import pytest

from jitagent.harness.seeds import load_seeds
from jitagent.sandbox.host import owner_tag
from jitagent.sandbox.launch import WORKSPACES
from jitagent.v1 import jitagent_pb2 as pb

from .conftest import running

DIRECT = load_seeds()["direct"].id
INVALID = grpc.StatusCode.INVALID_ARGUMENT
BAD_NAMES = ["../../etc/evil", "/etc/evil", "", ".", "a\0b", "x" * 300]


def our_workspaces() -> set:
    if not WORKSPACES.exists():
        return set()
    return {p.name for p in WORKSPACES.iterdir() if p.name.startswith(owner_tag())}


def outcome(**fields) -> pb.ReportOutcomeRequest:
    return pb.ReportOutcomeRequest(**{"harness_id": DIRECT, "task_text": "What is 2 + 2?", "reward": 1.0,
                                      "wall_s": 1.0, **fields})


def solve_with(**verifier) -> pb.SolveRequest:
    return pb.SolveRequest(task=pb.Task(prompt="p", verifier=pb.Verifier(**verifier)))


def test_bad_requests_name_the_field_and_leave_no_workspace_or_outcome(make_config):
    async def main():
        async with running(make_config()) as (server, client):
            before = our_workspaces()
            stored = server.solving.pipeline.bank.stats()
            solve = [(pb.SolveRequest(task=pb.Task(prompt="p", files={name: "x"})), "task: files")
                     for name in BAD_NAMES]
            solve += [
                (solve_with(numeric=pb.NumericAnswer(expected=1, tolerance=float("nan"))), "tolerance"),
                (solve_with(regex=pb.RegexMatch(pattern="(")),
                 "task.verifier.regex.pattern: does not compile"),
                (solve_with(regex=pb.RegexMatch(pattern="a" * 10_000)), "pattern"),
                (solve_with(reasoning_gym=pb.ReasoningGymEntry(dataset="chain_sum", seed=1, size=2, index=5)),
                 "index must be in [0, size=2)"),
            ]
            for request, fragment in solve:
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    [e async for e in client.stub.Solve(request)]
                assert err.value.code() == INVALID and fragment in err.value.details()
            with pytest.raises(grpc.aio.AioRpcError) as err:
                tasks = [pb.Task(prompt="p"), pb.Task(prompt="q", files={"..": ""})]
                await client.stub.Synthesize(pb.SynthesizeRequest(tasks=tasks))
            assert err.value.code() == INVALID and "tasks[1]: files" in err.value.details()
            reports = [(outcome(wall_s=float("nan")), "wall_s"), (outcome(wall_s=float("inf")), "wall_s"),
                       (outcome(reward=float("nan")), "reward"),  # a negative token count: uint32 now
                       (pb.ReportOutcomeRequest(harness_id=DIRECT, task_text="t", wall_s=1.0),
                        "reward: required"),
                       (outcome(wall_s=None), "wall_s: required"),
                       (outcome(check=pb.Verifier(regex=pb.RegexMatch(pattern="("))),
                        "check.regex.pattern: does not compile"),
                       (outcome(check=pb.Verifier(numeric=pb.NumericAnswer(expected=float("inf")))),
                        "check")]
            for request, fragment in reports:
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    await client.stub.ReportOutcome(request)
                assert err.value.code() == INVALID and fragment in err.value.details()
            streamed = [r async for r in client.stub.StreamTasks(iter(
                [pb.StreamTasksRequest(task=pb.Task(prompt="p", files={"/abs": "x"}))]))]
            assert streamed[0].error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
            assert streamed[0].error.message.startswith("task #0: files")
            assert our_workspaces() == before and server.solving.pipeline.bank.stats() == stored
            assert await client.health() == "SERVING"
    asyncio.run(main())


def test_a_crash_inside_a_task_is_internal_without_its_text_and_the_stream_goes_on(make_config, caplog):
    from jitagent.doors.server import pipeline_for

    def crashing(config):
        pipeline = pipeline_for(config)

        async def stream(task, **kw):
            raise RuntimeError(f"Symlink loop from '{WORKSPACES}/x/ws/loop'")
            yield
        pipeline.stream = stream
        return pipeline

    async def main():
        async with running(make_config(), build=crashing) as (server, client):
            await asyncio.wait_for(server.ready.wait(), 120)
            with pytest.raises(grpc.aio.AioRpcError) as err:
                [e async for e in client.solve("p")]
            streamed = [r async for r in client.stub.StreamTasks(iter(
                [pb.StreamTasksRequest(task=pb.Task(prompt=p)) for p in ("p", "q")]))]
            return err.value, streamed, await client.health()
    error, streamed, health = asyncio.run(main())
    assert error.code() == grpc.StatusCode.INTERNAL and "the server failed on it" in error.details()
    assert [r.error.code for r in streamed] == [grpc.StatusCode.INTERNAL.value[0]] * 2
    assert str(WORKSPACES) not in error.details() + "".join(r.error.message for r in streamed)
    assert health == "SERVING" and "Symlink loop" in caplog.text  # the log keeps the whole story
