"""Fleet mode on one machine, in one run: task throughput with 1, 2 and 4 `jitagent worker`
processes on one PostgreSQL bank and one Redis stream (scripted model: instant, and waiting
--latency-ms per call like a model server on another host), the delay before a write on
one replica is in another's index, and admission throughput of the bank on PostgreSQL and on SQLite.

PostgreSQL and redis-server are throwaway instances from the Debian packages on loopback ports;
PostgreSQL keeps its default durability (fsync, synchronous_commit=on) except in the row that says
otherwise. Admissions are measured without the embedding (task texts embedded beforehand): what is
timed is the bank's transaction. Everything stays on 127.0.0.1; every loop is bounded.
Usage: python bench/fleet.py [--tasks 200] [--workers 1 2 4] [--latency-ms 0 250] [--samples 200]
       [--admissions 300]
"""

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import psycopg
import redis

from harness_bank import HarnessBank, Outcome
from harness_bank.embedder import shared_embedder
from jitagent.fleet.services import create_database, local_postgres, local_redis
from jitagent.harness.seeds import load_seeds, seed_bank
from jitagent.harness.spec import parse_spec
from jitagent.tasks.task import Task

TYPES = ("zero", "nothing", "naught", "nil")
NO_SYNC_COMMIT = "?options=-c%20synchronous_commit%3Doff"


def tasks(n: int) -> list[str]:
    return [Task(id=f"b{i}", prompt=f"What is {i} minus {i}?", type=TYPES[i % len(TYPES)],
                 verifier={"kind": "numeric", "expected": 0}).model_dump_json() for i in range(n)]


def start_workers(count: int, slots: int, bank: str, redis_url: str, stream: str, tmp: Path, model: str):
    logs = [tmp / f"w{count}-{i}.log" for i in range(count)]
    workers = [subprocess.Popen(
        [sys.executable, "-m", "jitagent", "worker", "--bank", bank, "--redis", redis_url, "--stream", stream,
         "--name", f"w{i}", "--slots", str(slots), "--meta-model", model, "--n", "1", "--no-dry-run",
         "--data-dir", str(tmp / f"w{count}-{i}")], stdout=log.open("w"), stderr=subprocess.STDOUT)
        for i, log in enumerate(logs)]
    deadline = time.monotonic() + 600
    while not all('"event": "worker"' in log.read_text() for log in logs):  # models and bank loaded
        assert all(w.poll() is None for w in workers), f"a worker died: see {tmp}"
        assert time.monotonic() < deadline, "the workers did not start"
        time.sleep(0.2)
    return workers


def worker_seconds(count: int, n_tasks: int, slots: int, postgres: str, redis_url: str, tmp: Path,
                   latency_ms: float) -> float:
    """Seconds from putting `n_tasks` on the stream to their last result, `count` workers already up."""
    name = f"{count}x{latency_ms:g}ms"
    stream = f"bench{name}:tasks"
    bank = create_database(postgres, f"workers{name}".replace(".", "_"))
    (tmp / name).mkdir()
    workers = start_workers(count, slots, bank, redis_url, stream, tmp / name, f"scripted:{latency_ms:g}")
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        start = time.perf_counter()
        with client.pipeline(transaction=True) as pipe:
            for task in tasks(n_tasks):
                pipe.xadd(stream, {"task": task})
            pipe.execute()
        deadline = time.monotonic() + 600
        while client.xlen(f"{stream}:results") < n_tasks:
            assert time.monotonic() < deadline, "the tasks did not finish"
            time.sleep(0.01)
        elapsed = time.perf_counter() - start
        assert client.xlen(f"{stream}:dead") == 0
        return elapsed
    finally:
        for worker in workers:
            worker.terminate()
            worker.wait(60)


def variant(i: int) -> dict:
    react = load_seeds()["react"]
    data = react.model_dump(mode="json")
    data["name"], data["description"] = f"sync{i}", f"sync{i}: a react loop that checks units first"
    spec = parse_spec(data).derive(origin="synthesized", parent_id=react.id, generator="bench")
    return spec.model_dump(mode="json")


def sync_delays(url: str, samples: int) -> list[float]:
    """Milliseconds from a write starting on replica A to its vector in replica B's index (two banks
    on one database, each with its own pool, index and watcher, in one process); harnesses and
    outcomes alternate."""
    embedder = shared_embedder()
    a, b = HarnessBank(url, embedder=embedder), HarnessBank(url, embedder=embedder)
    seed_bank(a)
    harnesses = [variant(i) for i in range(samples // 2)]
    texts = [f"How many units of {i} fit in {i + 1}?" for i in range(samples - len(harnesses))]
    embedder.embed([f"{s['name']}: {s['description']}" for s in harnesses] + texts)
    delays = []
    for i in range(samples):
        start = time.perf_counter()
        if i % 2 == 0 and harnesses:
            a.add_harness(harnesses.pop())
        else:
            a.record_outcome(Outcome(harness_id=load_seeds()["react"].id, task_id=f"s{i}",
                                     task_text=texts.pop(), reward=1.0, prompt_tokens=10,
                                     completion_tokens=10, wall_s=0.1, cluster="sync"))
        assert b.wait_synced(a.watermark, 10)
        delays.append((time.perf_counter() - start) * 1000)
    a.close()
    b.close()
    return delays


def admissions(banks: list[HarnessBank], n: int) -> tuple[float, list[float]]:
    """Outcomes per second and each one's milliseconds, one thread per entry of `banks` writing at once."""
    seeds = list(load_seeds().values())
    work = [[Outcome(harness_id=seeds[(j + i) % 4].id, task_id=f"a{j}-{i}",
                     task_text=f"Add {i} and {j} together.", reward=float(i % 3 > 0),
                     prompt_tokens=20 + i % 7, completion_tokens=10, wall_s=0.2, cluster=f"admit{i % 3}")
             for i in range(n // len(banks))]
            for j in range(len(banks))]
    shared_embedder().embed([o.task_text for outcomes in work for o in outcomes])
    latencies: list[float] = []

    def write(bank: HarnessBank, outcomes: list[Outcome]) -> None:
        for outcome in outcomes:
            t = time.perf_counter()
            bank.record_outcome(outcome)
            latencies.append((time.perf_counter() - t) * 1000)
    threads = [threading.Thread(target=write, args=pair) for pair in zip(banks, work)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(latencies) / (time.perf_counter() - start), latencies


def percentiles(values: list[float]) -> str:
    return f"{np.percentile(values, 50):.1f} | {np.percentile(values, 99):.1f}"


def print_workers(args, postgres: str, redis_url: str, tmp: Path) -> None:
    print(f"| workers ({args.slots} slot each) | scripted model, ms per call | tasks | seconds | tasks/s "
          f"| vs 1 worker |")
    print("|---|---|---|---|---|---|")
    for latency in args.latency_ms:
        base = None
        for count in args.workers:
            seconds = worker_seconds(count, args.tasks, args.slots, postgres, redis_url, tmp, latency)
            rate = args.tasks / seconds
            base = base or rate
            print(f"| {count} | {latency:g} | {args.tasks} | {seconds:.1f} | {rate:.1f} "
                  f"| {rate / base:.2f}x |", flush=True)


def print_sync(args, postgres: str) -> None:
    delays = sync_delays(create_database(postgres, "sync"), args.samples)
    print("\n| replica sync: a write starting on A -> in B's index | samples | p50 ms | p99 ms | max ms |")
    print("|---|---|---|---|---|")
    print(f"| a harness or an outcome (LISTEN/NOTIFY, a 1 s poll behind it) | {len(delays)} | "
          f"{percentiles(delays)} | {max(delays):.1f} |", flush=True)


def print_admissions(args, postgres: str, tmp: Path) -> None:
    print("\n| admissions: record_outcome (texts embedded before) | writers | outcomes/s | p50 ms | p99 ms |")
    print("|---|---|---|---|---|")
    def database(name: str, options: str = ""):
        return lambda: create_database(postgres, name) + options
    rows = [  # label, writers, where, one bank per writer (replicas; else the writers share one bank)
        ("SQLite, WAL, synchronous=NORMAL", 1, lambda: tmp / "admit1.db", False),
        ("SQLite, WAL, synchronous=NORMAL (2 threads on one bank)", 2, lambda: tmp / "admit2.db", False),
        ("PostgreSQL, synchronous_commit=on", 1, database("admit1"), True),
        ("PostgreSQL, synchronous_commit=on (2 replicas)", 2, database("admit2"), True),
        ("PostgreSQL, synchronous_commit=off", 1, database("admit3", NO_SYNC_COMMIT), True)]
    for label, writers, where, replicas in rows:
        location = where()
        banks = [HarnessBank(location, embedder=shared_embedder()) for _ in range(writers if replicas else 1)]
        seed_bank(banks[0])
        rate, latencies = admissions(banks if replicas else banks * writers, args.admissions)
        print(f"| {label} | {writers} | {rate:.0f} | {percentiles(latencies)} |", flush=True)
        for bank in banks:
            bank.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--slots", type=int, default=1, help="slots per worker")
    parser.add_argument("--latency-ms", type=float, nargs="+", default=[0, 250],
                        help="the scripted model's wait per call (0: instant, CPU-bound here)")
    parser.add_argument("--samples", type=int, default=200, help="replica sync samples")
    parser.add_argument("--admissions", type=int, default=300, help="outcomes per admission row")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="jitagent-fleet-bench-"))
    shared_embedder()  # loaded before anything is timed
    with local_postgres() as postgres, local_redis() as redis_url:
        with psycopg.connect(postgres) as db:
            pg_version = db.execute("SHOW server_version").fetchone()[0]
        banner = subprocess.run(["redis-server", "--version"], capture_output=True, text=True).stdout
        redis_version = re.search(r"v=(\S+)", banner).group(1)
        print(f"{datetime.now().astimezone():%Y-%m-%d %H:%M %Z}, {platform.node()} ({os.cpu_count()} cores), "
              f"PostgreSQL {pg_version}, redis-server {redis_version}: "
              f"`python bench/fleet.py {' '.join(sys.argv[1:])}`\n")
        print_workers(args, postgres, redis_url, tmp)
        print_sync(args, postgres)
        print_admissions(args, postgres, tmp)
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
