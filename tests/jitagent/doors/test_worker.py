"""The worker against a real redis-server and a real bank, with the scripted model."""

import asyncio
import json
import time

import pytest

from jitagent.doors.worker import Worker, WorkerConfig
from jitagent.fleet.queue import TaskQueue
from jitagent.improvement.synthesis.synthesize import SynthesisConfig
from jitagent.models.base import ModelError
from jitagent.models.scripted import ScriptedModel, instant_model
from jitagent.solving.config import PipelineConfig
from jitagent.solving.pipeline import JitPipeline
from jitagent.tasks.task import Task


def task(i: int, prompt: str = "What is 0 times {i}?") -> str:
    return Task(id=f"t{i}", prompt=prompt.format(i=i), type="zero",
                verifier={"kind": "numeric", "expected": 0}).model_dump_json()


@pytest.fixture
def queue(redis_server, request):
    return TaskQueue.connect(redis_server, f"tasks-{request.node.name}", "workers")


def pipeline(bank, solver=None) -> JitPipeline:
    return JitPipeline(bank, instant_model(), solver or instant_model(),
                       PipelineConfig(synthesis=SynthesisConfig(n=1, dry_run=False)))


async def run_until(worker: Worker, done, timeout: float = 30.0) -> None:
    """Run the worker until `done()` (a coroutine function) holds, then stop it as SIGTERM would."""
    stop = asyncio.Event()
    running = asyncio.create_task(worker.run(stop))
    deadline = time.monotonic() + timeout
    while not await done():
        assert time.monotonic() < deadline, "the worker did not get there in time"
        assert not running.done(), running.exception()
        await asyncio.sleep(0.05)
    stop.set()
    await asyncio.wait_for(running, 15)


def test_tasks_run_record_once_and_are_acknowledged_with_one_result_each(queue, seeded_bank):
    worker = Worker(pipeline(seeded_bank), queue, WorkerConfig(name="w", slots=2, block_s=0.2))

    async def main():
        await queue.put([task(i) for i in range(6)])
        await run_until(worker, lambda: _results_at_least(queue, 6))
        results = await queue.read("results")
        assert sorted(json.loads(f["result"])["task_id"] for _, f in results) == [f"t{i}" for i in range(6)]
        assert {f["worker"] for _, f in results} == {"w"}
        assert (await queue.stats())["pending"] == 0
        await queue.close()
    asyncio.run(main())
    rows = seeded_bank.store.query("SELECT task_id, delivery FROM outcomes")
    assert len(rows) == 6 and len({r["delivery"] for r in rows}) == 6
    assert all(r["delivery"].startswith(queue.stream + ":") for r in rows)


def test_a_crashed_holders_entry_is_reclaimed_recorded_once_and_finished_once(queue, seeded_bank):
    """Worker A records the outcome and dies before acknowledging; B reclaims the entry after the
    idle timeout, runs it again (the bank keeps one outcome) and writes the one result."""
    async def main():
        await queue.ensure_group()
        await queue.put([task(1)])
        entry = await queue.take("a", claim_idle_s=60, block_s=1)
        await pipeline(seeded_bank).solve(Task.model_validate_json(entry.fields["task"]),
                                          delivery=queue.delivery(entry))
        assert seeded_bank.stats()["outcomes"] == 1
        b = Worker(pipeline(seeded_bank), queue, WorkerConfig(name="b", claim_idle_s=0.3, block_s=0.1))
        await run_until(b, lambda: _results_at_least(queue, 1))
        assert not await queue.finish("a", entry, {"late": "yes"})  # A lost it: it writes nothing
        results = await queue.read("results")
        assert [f["worker"] for _, f in results] == ["b"]
        assert "already recorded" in json.loads(results[0][1]["result"])["bank_decision"]
        await queue.close()
    asyncio.run(main())
    assert seeded_bank.stats()["outcomes"] == 1


def test_a_run_failing_for_infrastructure_is_retried_then_buried_with_its_last_error(queue, seeded_bank):
    def down(messages):
        raise ModelError("connection refused by the model server")
    worker = Worker(pipeline(seeded_bank, ScriptedModel(down)), queue,
                    WorkerConfig(name="w", claim_idle_s=0.2, max_deliveries=2, block_s=0.1))

    async def main():
        await queue.put([task(1)])
        await run_until(worker, lambda: _dead_at_least(queue, 1))
        (_, dead), = await queue.read("dead")
        assert dead["deliveries"] == "3" and "model failed: connection refused" in dead["error"]
        assert json.loads(dead["task"])["id"] == "t1"
        stats = await queue.stats()
        assert stats["pending"] == 0 and stats["results"] == 0
        await queue.close()
    asyncio.run(main())
    assert seeded_bank.stats()["outcomes"] == 0  # an infrastructure failure says nothing of the harness


def test_an_entry_that_is_not_a_task_is_a_dead_letter_at_once(queue, seeded_bank, monkeypatch):
    worker = Worker(pipeline(seeded_bank), queue, WorkerConfig(name="w", block_s=0.1))
    monkeypatch.setattr("jitagent.doors.worker.MAX_ENTRY_CHARS", 10_000)

    async def settled() -> bool:
        stats = await queue.stats()
        return stats["dead"] == 4 and stats["results"] == 1

    async def main():
        tooled = json.dumps({"id": "c", "prompt": "Total of A-1?", "client_tools": [{"name": "total"}]})
        oversized = "[" * 10_001  # read unparsed, it would be JSON nested past any parser's depth
        await queue.put(['{"id": "x"}', "not json", tooled, oversized, task(2)])
        await run_until(worker, settled)
        dead = [fields for _, fields in await queue.read("dead")]
        assert "prompt" in dead[0]["error"] and "not valid JSON" in dead[1]["error"]
        assert "cannot carry client_tools" in dead[2]["error"]  # its client could not answer a call
        assert "10,001 characters; a queued task is at most 10,000" in dead[3]["error"]
        assert len(dead[3]["task"]) < 2_100 and dead[3]["task"].endswith("(10,001 characters)")  # clipped
        assert all("\n" not in d["error"] and d["deliveries"] == "1" for d in dead)
        await queue.close()
    asyncio.run(main())


def test_a_task_is_taken_only_into_a_free_slot(queue, seeded_bank):
    """Two slots: with two tasks held, the other three stay in the stream until a slot frees."""
    worker = Worker(pipeline(seeded_bank), queue, WorkerConfig(name="w", slots=2, block_s=0.1))
    release, solve = asyncio.Event(), worker.solving.pipeline.solve

    async def held_solve(*args, **kw):
        await release.wait()
        return await solve(*args, **kw)
    worker.solving.pipeline.solve = held_solve

    async def main():
        await queue.put([task(i) for i in range(5)])

        async def all_done() -> bool:
            stats = await queue.stats()
            if stats["pending"] == 2 and stats["lag"] == 3:  # two taken, three never delivered
                release.set()
            return stats["results"] == 5
        await run_until(worker, all_done)
        await queue.close()
    asyncio.run(main())


async def _results_at_least(queue: TaskQueue, n: int) -> bool:
    return (await queue.stats())["results"] >= n


async def _dead_at_least(queue: TaskQueue, n: int) -> bool:
    return (await queue.stats())["dead"] >= n


def test_the_results_and_dead_letter_streams_keep_about_their_newest_entries(queue, monkeypatch):
    """Settled entries are trimmed (MAXLEN ~): a stream of dead letters does not grow Redis forever."""
    monkeypatch.setattr("jitagent.fleet.queue.KEPT", 10)

    async def main():
        await queue.ensure_group()
        await queue.put(["not json"] * 300)
        while (entry := await queue.take("w", 60.0, 0.1)) is not None:
            assert await queue.bury("w", entry, "refused")
        stats = await queue.stats()
        assert stats["tasks"] == 300 and stats["pending"] == 0
        assert 10 <= stats["dead"] < 300  # Redis trims whole nodes of entries: about, not exactly, 10
        await queue.close()
    asyncio.run(main())


def test_with_tenants_an_entry_runs_as_its_tokens_tenant_and_one_without_a_known_token_is_a_dead_letter(
        queue, seeded_bank):
    """The queue authenticates as every door does (issue 45): the token an entry carries names its tenant,
    its run id and memory; a request id is the token's, so no one else can claim it first."""
    from jitagent.solving.access import Access, Grant, digest

    access = Access([Grant(token_sha256=digest(name), tenant=name) for name in ("victim", "attacker")],
                    tenanted=True)
    worker = Worker(pipeline(seeded_bank), queue, WorkerConfig(name="w", block_s=0.2), access)

    async def main():
        claimed = await queue.put([task(1, "What is 0 times {i}? BLUEBIRD")], ["order-7"], token="attacker")
        own = await queue.put([task(2)], ["order-7"], token="victim")
        assert own != claimed  # the victim's request id is its own
        await queue.put([task(3)], token="stranger")
        await queue.put([task(4)])
        await run_until(worker, lambda: _results_at_least(queue, 2))
        await run_until(worker, lambda: _dead_at_least(queue, 2))
        results = {f["task_id"]: f for _, f in await queue.read("results")}
        assert {k: f["tenant"] for k, f in results.items()} == {"t1": "attacker", "t2": "victim"}
        victims = json.loads(results["t2"]["result"])
        assert victims["run_id"].startswith("victim:") and victims["cluster"] == "victim/type:zero"
        dead = await queue.read("dead")
        assert all("no token this deployment knows" in f["error"] for _, f in dead) and len(dead) == 2
        assert not any("token" in f for _, f in dead)  # a dead letter keeps no token
        assert await queue.redis.xlen(queue.stream) == 1  # the settled entries that held a token are gone
        await queue.put([task(5)], token="victim")  # a worker without tenants takes no token as its own
        plain = Worker(pipeline(seeded_bank), queue, WorkerConfig(name="plain", block_s=0.2))
        await run_until(plain, lambda: _dead_at_least(queue, 3))
        last = (await queue.read("dead"))[-1][1]
        assert "carries a token, and this worker has no --tokens-file" in last["error"]
        await queue.close()
    asyncio.run(main())
