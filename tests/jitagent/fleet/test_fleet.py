"""The fleet on one machine: real PostgreSQL and redis-server, three server replicas (real gRPC
servers on 127.0.0.1, each with its own bank connection pool, index and watcher) and two
`jitagent worker` processes on one bank, the scripted model. A 200-task stream: 150 tasks on the
Redis stream for the workers, 50 spread over the replicas as a load balancer would. One worker is
frozen while it holds a task, then killed with SIGKILL; the other reclaims and finishes its entries.
"""

import asyncio
import os
import signal
import subprocess
import sys
import time

import psycopg
import redis

from jitagent.doors.server import JitAgentServer, ServerConfig
from jitagent.fleet.services import free_port
from jitagent.improvement.synthesis.synthesize import SynthesisConfig
from jitagent.protocol.client import JitAgentClient
from jitagent.solving.config import PipelineConfig
from jitagent.tasks.task import Task

TASKS = [Task(id=f"f{i}", prompt=f"What is {i} minus {i}?", type=("zero", "nothing", "naught")[i % 3],
              verifier={"kind": "numeric", "expected": 0}) for i in range(200)]
QUEUED, DIRECT = TASKS[:150], TASKS[150:]
STREAM = "fleet:tasks"


def start_worker(name: str, bank: str, redis_url: str, tmp_path) -> subprocess.Popen:
    log = (tmp_path / f"{name}.log").open("w")
    return subprocess.Popen(
        [sys.executable, "-m", "jitagent", "worker", "--bank", bank, "--redis", redis_url, "--stream", STREAM,
         "--name", name, "--slots", "2", "--claim-idle", "2", "--meta-model", "scripted", "--n", "1",
         "--no-dry-run", "--data-dir", str(tmp_path / name)], stdout=log, stderr=subprocess.STDOUT)


def held_by(client: redis.Redis, consumer: str) -> list[str]:
    return [p["message_id"] for p in client.xpending_range(STREAM, "jitagent", "-", "+", 100, consumer)]


def kill_while_holding(worker: subprocess.Popen, client: redis.Redis, name: str) -> list[str]:
    """Freeze the worker at a moment it holds entries, note them, SIGKILL it: killed mid-task."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        os.kill(worker.pid, signal.SIGSTOP)
        held = held_by(client, name)
        if held:
            os.kill(worker.pid, signal.SIGKILL)
            worker.wait()
            return held
        os.kill(worker.pid, signal.SIGCONT)
        time.sleep(0.02)
    raise AssertionError(f"{name} never held an entry")


def test_replicas_and_workers_process_a_stream_with_no_outcome_lost_or_doubled(
        postgres_url, redis_server, tmp_path):
    client = redis.Redis.from_url(redis_server, decode_responses=True)
    synthesis = PipelineConfig(synthesis=SynthesisConfig(n=1, dry_run=False))
    configs = [ServerConfig(port=free_port(), data_dir=tmp_path / f"replica{r}", bank=postgres_url,
                            meta_model="scripted", pipeline=synthesis) for r in range(3)]

    async def fleet():
        replicas = [JitAgentServer(config) for config in configs]
        for server in replicas:
            await server.start()
        await asyncio.wait_for(asyncio.gather(*(s.ready.wait() for s in replicas)), 120)
        workers = {name: start_worker(name, postgres_url, redis_server, tmp_path) for name in ("w1", "w2")}
        try:
            put = subprocess.run([sys.executable, "-m", "jitagent", "queue", "--redis", redis_server,
                                  "--stream", STREAM, "put", "-"], capture_output=True, text=True, timeout=60,
                                 input="\n".join(t.model_dump_json() for t in QUEUED))
            assert put.returncode == 0 and len(put.stdout.splitlines()) == 150, put.stderr

            async def through(replica: int) -> list:
                async with JitAgentClient(f"127.0.0.1:{replicas[replica].port}") as grpc_client:
                    return [r async for r in grpc_client.stream(DIRECT[replica::3], n=1, timeout=300)]
            direct = asyncio.gather(*(through(r) for r in range(3)))
            while client.xlen(f"{STREAM}:results") < 30:
                await asyncio.sleep(0.05)
            killed = await asyncio.to_thread(kill_while_holding, workers["w1"], client, "w1")
            replies = [r for rs in await direct for r in rs]
            deadline = time.monotonic() + 120
            while client.xlen(f"{STREAM}:results") < 150 and time.monotonic() < deadline:
                await asyncio.sleep(0.1)
            return killed, replies
        finally:
            for worker in workers.values():
                if worker.poll() is None:
                    worker.send_signal(signal.SIGTERM)
                    worker.wait(30)
            for server in replicas:
                await server.stop()
    killed, replies = asyncio.run(fleet())

    assert sorted(r.task_id for r in replies) == sorted(t.id for t in DIRECT)
    results = client.xrange(f"{STREAM}:results")
    assert sorted(f["task_id"] for _, f in results) == sorted(t.id for t in QUEUED)  # each once
    finished_by = {f["entry"]: f["worker"] for _, f in results}
    assert all(finished_by[entry] == "w2" for entry in killed)  # reclaimed and finished by the other
    assert client.xlen(f"{STREAM}:dead") == 0 and client.xpending(STREAM, "jitagent")["pending"] == 0
    with psycopg.connect(postgres_url) as db:
        rows = db.execute("SELECT task_id, delivery FROM outcomes").fetchall()
    assert sorted(task_id for task_id, _ in rows) == sorted(t.id for t in TASKS)  # none lost, none twice
    assert len({delivery for _, delivery in rows if delivery}) == 150
