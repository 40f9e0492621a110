"""Restarts of PostgreSQL and Redis under a live bank, worker and replica: each carries on by itself,
with no restart of its own (real servers on loopback, the scripted model)."""

import asyncio
import json
import time

import pytest
from redis.exceptions import RedisError

from harness_bank import HarnessBank
from harness_bank.recorded import recorded_run
from harness_bank.store import StoreUnavailable
from jitagent.doors.worker import Worker, WorkerConfig
from jitagent.fleet.queue import TaskQueue
from jitagent.fleet.services import (
    PostgresCluster,
    RedisServer,
    free_port,
    postgres_missing,
    redis_missing,
)
from jitagent.harness.seeds import load_seeds, seed_bank
from jitagent.improvement.synthesis.synthesize import SynthesisConfig
from jitagent.models.scripted import instant_model
from jitagent.solving.config import PipelineConfig
from jitagent.solving.pipeline import JitPipeline
from jitagent.tasks.task import Task

TASKS = [Task(id=f"r{i}", prompt=f"What is {i} minus {i}?", type="zero",
              verifier={"kind": "numeric", "expected": 0}) for i in range(6)]


@pytest.fixture
def postgres():
    if problem := postgres_missing():
        pytest.skip(problem)
    cluster = PostgresCluster({"fsync": "off"})  # commits survive a crash of the server (not of the OS)
    cluster.start()
    yield cluster
    cluster.stop()
    cluster.remove()


def redis(appendonly: bool) -> RedisServer:
    if problem := redis_missing():
        pytest.skip(problem)
    server = RedisServer(appendonly=appendonly)
    server.start()
    return server


def test_a_put_under_request_ids_adds_each_task_once(redis_server):
    async def main():
        queue = TaskQueue.connect(redis_server, "once:tasks")
        first = await queue.put([t.model_dump_json() for t in TASKS[:3]], [t.id for t in TASKS[:3]])
        again = await queue.put([t.model_dump_json() for t in TASKS[1:4]], [t.id for t in TASKS[1:4]])
        assert again[:2] == first[1:] and again[2] not in first
        assert await queue.redis.xlen(queue.stream) == 4
        await queue.close()
    asyncio.run(main())


def test_a_bank_on_postgres_carries_on_through_a_restart_of_its_server(postgres, embedder):
    bank = HarnessBank(postgres.url, embedder=embedder)
    try:
        seed_bank(bank)
        postgres.restart()  # as a crash: every pooled connection dies with it
        assert len(bank.list_harnesses()) == len(load_seeds())  # a dead connection is replaced as it is taken
        postgres.stop()
        bank.store.pool.timeout = 1.0
        start = time.monotonic()
        with pytest.raises(StoreUnavailable, match="PostgreSQL at"):
            bank.list_harnesses()
        assert time.monotonic() - start < 30  # it gives up, not waits for the server (2 loaded cores)
        postgres.start()
        assert len(bank.list_harnesses()) == len(load_seeds())
    finally:
        bank.close()


def pipeline(bank) -> JitPipeline:
    return JitPipeline(bank, instant_model(), instant_model(),
                       PipelineConfig(synthesis=SynthesisConfig(n=1, dry_run=False)))


async def results(queue: TaskQueue) -> set[str]:
    try:
        return {json.loads(f["result"])["task_id"] for _, f in await queue.read("results")}
    except (RedisError, OSError):  # still restarting
        return set()


async def until(check, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, "not in time"
        await asyncio.sleep(0.1)


@pytest.mark.parametrize("appendonly", [True, False], ids=["aof", "no-persistence"])
def test_a_worker_carries_on_through_a_redis_restart(seeded_bank, appendonly):
    """With an append-only file Redis comes back with the streams and the group; without, the worker
    makes the group again. Either way the tasks put after the restart are run, by the same worker."""
    server = redis(appendonly)

    async def main():
        queue = TaskQueue.connect(server.url, "restart:tasks")
        worker = Worker(pipeline(seeded_bank), queue, WorkerConfig(name="w", claim_idle_s=2, block_s=0.2))
        stop = asyncio.Event()
        running = asyncio.create_task(worker.run(stop))
        await queue.put([t.model_dump_json() for t in TASKS[:3]])
        await until(lambda: _has(queue, TASKS[:3]))
        await asyncio.to_thread(server.restart)
        await queue.put([t.model_dump_json() for t in TASKS[3:]])
        await until(lambda: _has(queue, TASKS[3:] if not appendonly else TASKS))
        assert not running.done()
        stop.set()
        await asyncio.wait_for(running, 15)
        await queue.close()
    try:
        asyncio.run(main())
    finally:
        server.stop()
        server.remove()


async def _has(queue: TaskQueue, tasks: list[Task]) -> bool:
    return {t.id for t in tasks} <= await results(queue)


def test_a_replica_carries_on_through_a_postgres_restart(postgres, tmp_path):
    from jitagent.doors.server import JitAgentServer, ServerConfig

    config = ServerConfig(port=free_port(), data_dir=tmp_path / "replica", bank=postgres.url,
                          meta_model="scripted",
                          pipeline=PipelineConfig(synthesis=SynthesisConfig(n=1, dry_run=False)))

    async def main():
        from jitagent.protocol.client import JitAgentClient

        server = JitAgentServer(config)
        await server.start()
        try:
            await asyncio.wait_for(server.ready.wait(), 120)
            async with JitAgentClient(f"127.0.0.1:{server.port}") as client:
                assert (await client.solve_result(TASKS[0])).HasField("reward")
                await asyncio.to_thread(postgres.restart)
                assert (await client.solve_result(TASKS[1])).HasField("reward")  # no restart of its own
        finally:
            await server.stop()
    asyncio.run(main())


def test_a_run_and_its_outcome_are_recorded_together_or_not_at_all(seeded_bank, monkeypatch):
    """The database lost between the two writes would leave a run without its outcome, which a retry by
    run id would take for the whole of it (an unverified result): both are one transaction."""
    def lost(*args):
        raise StoreUnavailable("PostgreSQL at db: server closed the connection unexpectedly")

    monkeypatch.setattr(seeded_bank.sync, "append_vector", lost)  # the outcome's last write
    with pytest.raises(StoreUnavailable):
        asyncio.run(pipeline(seeded_bank).solve(TASKS[0], run_id="job-7"))
    assert recorded_run(seeded_bank, "job-7") is None and seeded_bank.stats()["outcomes"] == 0
    monkeypatch.undo()
    result = asyncio.run(pipeline(seeded_bank).solve(TASKS[0], run_id="job-7"))
    recorded = recorded_run(seeded_bank, "job-7")
    assert recorded.reward == result.run.reward == 1.0 and recorded.run.answer == result.run.answer
