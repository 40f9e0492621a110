"""The fleet under faults: N tasks through 3 replicas and 3 workers on one PostgreSQL bank and one Redis
(append-only file on), while a worker and a replica are killed with SIGKILL, PostgreSQL is restarted as
after a crash (`pg_ctl stop -m immediate`, then start) and Redis is restarted.

Half the tasks go on the Redis stream for the workers (put once, by task id); the other half are
solved through the replicas as a client behind a load balancer would: each under a request id (its
task id), retried on another replica after a failure, the same id every time. A supervisor starts a
killed process again after --restart-after seconds, as systemd would; PostgreSQL and Redis come back
under the processes that use them, which must carry on by themselves. Every task must end exactly
once, in a result or in the dead letters with its reason: `lost` counts tasks with no ending,
`duplicated` tasks with more than one ending or more than one outcome in the bank. The bank's
integrity is checked at the end (every outcome's experience vector, every harness's vector, no run
or outcome twice, an index built fresh holds the whole vector log).

The models are scripted (answers in --latency-ms per call, like model servers on other hosts), so what
shows is the fleet's shape, not a model's. PostgreSQL runs with fsync off (a crash of the server
loses no commit, only a crash of the machine could), synchronous_commit on. Everything is on 127.0.0.1.
Writes OUT/chaos-DATE/summary.json (the process logs stay in a temp dir, named there).
Usage: python bench/chaos.py [--tasks 1000] [--latency-ms 100] [--out bench/results]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import grpc
import psycopg
import redis.asyncio as aioredis

from jitagent.fleet.queue import TaskQueue
from jitagent.fleet.services import PostgresCluster, RedisServer, create_database, free_port
from jitagent.protocol.client import JitAgentClient
from jitagent.tasks.task import Task

STREAM = "chaos:tasks"
FAULTS = ((0.15, "kill -9 worker"), (0.35, "kill -9 replica"), (0.55, "restart postgresql"),
          (0.75, "restart redis"))
RETRIED = {"UNAVAILABLE", "UNKNOWN", "INTERNAL", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "CANCELLED"}


def tasks(n: int) -> list[Task]:
    types = ("zero", "nothing", "naught", "nil")
    return [Task(id=f"c{i}", prompt=f"What is {i} minus {i}?", type=types[i % len(types)],
                 verifier={"kind": "numeric", "expected": 0}) for i in range(n)]


@dataclass
class Process:
    """A replica or a worker: its command, its log and the running process."""

    name: str
    argv: list[str]
    log: Path
    ready: str  # a line of its log that says it is up
    port: int | None = None
    popen: subprocess.Popen | None = None
    starts: int = 0

    def start(self) -> None:
        self.starts += 1
        with self.log.open("a") as log:
            self.popen = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT)

    def kill(self) -> None:
        os.kill(self.popen.pid, signal.SIGKILL)
        self.popen.wait()

    @property
    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    async def until_ready(self, timeout: float = 600) -> None:
        deadline = time.monotonic() + timeout
        while self.log.read_text().count(self.ready) < self.starts:
            if not self.alive or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not start: {self.log}")
            await asyncio.sleep(0.2)


def fleet(args, bank: str, redis_url: str, logs: Path) -> tuple[list[Process], list[Process]]:
    model = ["--meta-model", f"scripted:{args.latency_ms:g}", "--n", "1", "--no-dry-run"]
    replicas, workers = [], []
    for r in range(args.replicas):
        port = free_port()
        replicas.append(Process(f"replica{r}", [
            sys.executable, "-m", "jitagent", "serve", "--port", str(port), "--bank", bank, "--data-dir",
            str(logs / f"replica{r}"), "--concurrency", "2", *model], logs / f"replica{r}.log",
            '"event": "serving"', port))
    for w in range(args.workers):
        workers.append(Process(f"worker{w}", [
            sys.executable, "-m", "jitagent", "worker", "--bank", bank, "--redis", redis_url, "--stream",
            STREAM, "--name", f"worker{w}", "--slots", "2", "--claim-idle", "5", "--max-deliveries", "5",
            "--task-timeout", "60", "--data-dir", str(logs / f"worker{w}"), *model],
            logs / f"worker{w}.log", '"event": "worker"'))
    return replicas, workers


@dataclass
class Endings:
    """How each task ended, as seen by the client and on the streams."""

    total: int
    results: Counter = field(default_factory=Counter)
    dead: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    served_by: Counter = field(default_factory=Counter)  # after the last fault
    retries: int = 0
    last_fault_at: float = float("inf")

    def ended(self) -> int:
        return len(set(self.results) | set(self.dead))

    def result(self, task_id: str, by: str) -> None:
        self.results[task_id] += 1
        if time.monotonic() > self.last_fault_at:
            self.served_by[by] += 1


async def solve_direct(todo: asyncio.Queue, replicas: list[Process], endings: Endings, attempts: int) -> None:
    """A client's loop: each task under its request id, on the next replica after a failure."""
    clients = [JitAgentClient(f"127.0.0.1:{r.port}") for r in replicas]
    try:
        while not todo.empty():
            task = todo.get_nowait()
            error = ""
            request_id = f"chaos-{task.id}"
            for attempt in range(attempts):
                which = (int(task.id[1:]) + attempt) % len(replicas)
                try:
                    result = await clients[which].solve_result(task, request_id=request_id, timeout=60)
                except grpc.aio.AioRpcError as exc:
                    error = f"{exc.code().name}: {exc.details()}"
                    if exc.code().name not in RETRIED:
                        break
                    endings.retries += 1
                    await asyncio.sleep(min(5.0, 0.5 * (attempt + 1)))
                    continue
                if result.run_id != request_id:
                    error = f"answered under run id {result.run_id}"
                    break
                endings.result(task.id, replicas[which].name)
                break
            else:
                error = f"{attempts} attempts; last: {error}"
            if task.id not in endings.results:
                endings.dead[task.id].append(f"client: {error}")
    finally:
        for client in clients:
            await client.close()


async def until_settled(redis_url: str, queued: list[Task], endings: Endings, stop: asyncio.Event) -> None:
    """Put the queued tasks once (retrying the put itself), then read results and dead letters."""
    queue = TaskQueue.connect(redis_url, STREAM)
    while True:
        try:
            await queue.put([t.model_dump_json() for t in queued], [t.id for t in queued])
            break
        except (aioredis.RedisError, OSError):
            await asyncio.sleep(1)
    after = {"results": "-", "dead": "-"}
    while not stop.is_set():
        for which in after:
            try:
                entries = await queue.read(which, after[which])
            except (aioredis.RedisError, OSError):
                continue
            for entry_id, fields in entries:
                if which == "results":
                    endings.result(fields["task_id"], fields["worker"])
                else:
                    endings.dead[json.loads(fields["task"])["id"]].append(f"queue: {fields['error']}")
                after[which] = entry_id
        await asyncio.sleep(0.5)
    await queue.close()


async def inject(replicas, workers, postgres, redis_server, endings: Endings, start: float,
                 restart_after: float, faults: list[dict]) -> None:
    """Each fault as the tasks ended reach its share; a killed process is started again by a supervisor
    in the background, while the next faults come."""
    supervised = []
    for fraction, kind in FAULTS:
        while endings.ended() < fraction * endings.total:
            await asyncio.sleep(0.2)
        fault = {"kind": kind, "at_s": round(time.monotonic() - start, 1), "ended_before": endings.ended()}
        faults.append(fault)
        if kind.endswith(("worker", "replica")):
            victim = (workers if kind.endswith("worker") else replicas)[0]
            victim.kill()
            fault["target"] = victim.name
            supervised.append(asyncio.create_task(supervise(victim, restart_after, fault, start)))
        elif kind == "restart postgresql":
            await asyncio.to_thread(postgres.restart, "immediate")
        else:
            await asyncio.to_thread(redis_server.restart)
        fault.setdefault("back_s", round(time.monotonic() - start - fault["at_s"], 1))
    endings.last_fault_at = time.monotonic()
    await asyncio.gather(*supervised)


async def supervise(victim: Process, restart_after: float, fault: dict, start: float) -> None:
    await asyncio.sleep(restart_after)
    victim.start()
    await victim.until_ready()
    fault["back_s"] = round(time.monotonic() - start - fault["at_s"], 1)


def integrity(bank_url: str) -> dict:
    """What a bank that came through the faults must still hold."""
    from harness_bank import HarnessBank

    with psycopg.connect(bank_url) as db:
        one = lambda sql: db.execute(sql).fetchone()[0]  # noqa: E731
        report = {
            "harnesses": one("SELECT COUNT(*) FROM harnesses"),
            "outcomes": one("SELECT COUNT(*) FROM outcomes"), "runs": one("SELECT COUNT(*) FROM runs"),
            "tasks_with_two_outcomes": [r[0] for r in db.execute(
                "SELECT task_id FROM outcomes GROUP BY task_id HAVING COUNT(*) > 1")],
            "tasks_with_an_outcome": [r[0] for r in db.execute("SELECT DISTINCT task_id FROM outcomes")],
            "outcomes_without_their_vector": one(
                "SELECT COUNT(*) FROM outcomes o WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.kind = "
                "'experience' AND v.ref = o.id::text)"),
            "vectors_without_their_outcome": one(
                "SELECT COUNT(*) FROM vectors v WHERE v.kind = 'experience' AND NOT EXISTS (SELECT 1 FROM "
                "outcomes o WHERE o.id::text = v.ref)"),
            "harnesses_without_their_vector": one(
                "SELECT COUNT(*) FROM harnesses h WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.kind = "
                "'harness' AND v.ref = h.id)"),
            "vectors": one("SELECT COUNT(*) FROM vectors")}
    bank = HarnessBank(bank_url)
    try:
        report["fresh_index_size"] = bank.index.size
    finally:
        bank.close()
    missing = ("outcomes_without_their_vector", "vectors_without_their_outcome",
               "harnesses_without_their_vector")
    report["ok"] = (not report["tasks_with_two_outcomes"] and not any(report[k] for k in missing)
                    and report["fresh_index_size"] == report["vectors"])
    return report


async def started(replicas: list, workers: list) -> tuple[list, list]:
    for process in replicas[:1]:  # the first one migrates and seeds the bank alone
        process.start()
        await process.until_ready()
    for process in replicas[1:] + workers:
        process.start()
    await asyncio.gather(*(p.until_ready() for p in replicas + workers))
    return replicas, workers


def summary(args, work: list, endings, bank: str, faults: list, fault_error: str | None, alive: dict,
            wall: float, tmp: Path) -> dict:
    """How every task ended (once, twice, never) and what the bank holds, after the run."""
    ids = [t.id for t in work]
    endings_of = {i: endings.results[i] + len(endings.dead.get(i, [])) for i in ids}
    bank_report = integrity(bank)
    doubled = {i for i in ids if endings_of[i] > 1} | set(bank_report["tasks_with_two_outcomes"])
    # every task here is verified: one that ended in a result has its outcome in the bank
    learned = set(bank_report.pop("tasks_with_an_outcome"))
    unlearned = sorted({i for i in ids if endings.results[i]} - learned)
    return {
        "tasks": len(work), "completed": sum(1 for i in ids if endings.results[i]),
        "dead_lettered": sum(1 for i in ids if i in endings.dead and not endings.results[i]),
        "lost": sum(1 for i in ids if endings_of[i] == 0),
        "duplicated": len(doubled), "duplicated_tasks": sorted(doubled),
        "completed_without_outcome": unlearned, "faults": faults, "fault_error": fault_error,
        "dead_letters": {i: reasons for i, reasons in endings.dead.items()},
        "direct_retries": endings.retries,
        "alive_at_end": alive, "served_after_the_last_fault": dict(endings.served_by),
        "bank": bank_report, "wall_s": round(wall, 1), "tasks_per_s": round(len(work) / wall, 2),
        "latency_ms": args.latency_ms, "replicas": args.replicas, "workers": args.workers,
        "logs": str(tmp)}


async def chaos(args, tmp: Path) -> dict:
    postgres, redis_server = PostgresCluster({"fsync": "off"}), RedisServer(appendonly=True)
    postgres.start()
    redis_server.start()
    try:
        bank = create_database(postgres.url, "chaos")
        replicas, workers = await started(*fleet(args, bank, redis_server.url, tmp))
        work = tasks(args.tasks)
        queued, direct = work[::2], work[1::2]
        endings, faults, stop = Endings(len(work)), [], asyncio.Event()
        start = time.monotonic()
        settling = asyncio.create_task(until_settled(redis_server.url, queued, endings, stop))
        todo: asyncio.Queue = asyncio.Queue()
        for task in direct:
            todo.put_nowait(task)
        clients = [asyncio.create_task(solve_direct(todo, replicas, endings, args.attempts))
                   for _ in range(2 * len(replicas))]
        injecting = asyncio.create_task(inject(replicas, workers, postgres, redis_server, endings, start,
                                               args.restart_after, faults))
        deadline = start + args.timeout_min * 60
        while endings.ended() < len(work) and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        wall = time.monotonic() - start
        # every fault injected and its process back (a late duplicate would show meanwhile)
        await asyncio.wait({injecting}, timeout=max(5.0, deadline - time.monotonic()))
        stop.set()
        await settling
        for task in clients + [injecting]:
            task.cancel()
        await asyncio.gather(*clients, injecting, return_exceptions=True)
        alive = {p.name: p.alive for p in replicas + workers}
        for process in replicas + workers:
            if process.alive:
                process.popen.terminate()
                process.popen.wait(60)
        error = (repr(injecting.exception()) if injecting.done() and not injecting.cancelled()
                 and injecting.exception() else None)
        return summary(args, work, endings, bank, faults, error, alive, wall, tmp) | {
            "queued": len(queued), "direct": len(direct)}
    finally:
        redis_server.stop()
        postgres.stop()
        postgres.remove()
        redis_server.remove()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--latency-ms", type=float, default=100, help="the scripted models' wait per call")
    parser.add_argument("--attempts", type=int, default=10, help="a client's tries per task, across replicas")
    parser.add_argument("--restart-after", type=float, default=2.0, help="seconds before a killed process "
                                                                         "is started again")
    parser.add_argument("--timeout-min", type=float, default=60, help="give up on the tasks left after this")
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="jitagent-chaos-"))
    summary = asyncio.run(chaos(args, tmp))
    summary |= {"command": "python bench/chaos.py " + " ".join(sys.argv[1:]), "date": str(date.today()),
                "host": f"{platform.node()} ({os.cpu_count()} cores)"}
    out = args.out / f"chaos-{date.today()}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: summary[k] for k in ("tasks", "completed", "dead_lettered", "lost", "duplicated")}
                     | {"bank_ok": summary["bank"]["ok"], "summary": str(out / "summary.json")}))
    clean = summary["lost"] == summary["duplicated"] == len(summary["completed_without_outcome"]) == 0
    return 0 if clean and summary["bank"]["ok"] and len(summary["faults"]) == len(FAULTS) else 1


if __name__ == "__main__":
    sys.exit(main())
