"""Load on a real server from a separate client process: unary Synthesize at concurrency
1/8/32 and 32 concurrent StreamTasks streams.

The server runs as its own process (`jitagent serve`) with the scripted instant model and no
dry run, so what is measured is the server: gRPC, routing, retrieval (MiniLM on repeated task
texts comes from its cache), validation, the bank's SQLite writes and faiss. Everything
stays on 127.0.0.1; request loops are bounded in count and time.
Usage: python bench/server_load.py [--seconds 10]
"""

import argparse
import asyncio
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date

import numpy as np

from jitagent.protocol.client import JitAgentClient
from jitagent.tasks.task import Task

TEXTS = [f"Compute the total of column {c} in table {t} and report it." for c in "abcdefgh" for t in range(8)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def unary(address: str, concurrency: int, seconds: float, n: int, typed: bool = False) -> dict:
    latencies: list[float] = []
    errors = 0
    stop = time.monotonic() + seconds
    async with JitAgentClient(address) as client:
        async def worker(w: int):
            nonlocal errors
            i = w
            while time.monotonic() < stop:
                t = time.perf_counter()
                try:
                    text = TEXTS[i % len(TEXTS)]
                    await client.synthesize([Task(id=f"r{i}", prompt=text, type="bench") if typed else text],
                                            n=n, timeout=30)
                    latencies.append((time.perf_counter() - t) * 1000)
                except Exception:
                    errors += 1
                i += concurrency
        start = time.monotonic()
        await asyncio.gather(*(worker(w) for w in range(concurrency)))
        elapsed = time.monotonic() - start
    return {"rps": len(latencies) / elapsed, "p50": float(np.percentile(latencies, 50)),
            "p99": float(np.percentile(latencies, 99)), "n": len(latencies), "errors": errors}


async def streams(address: str, count: int, tasks_per_stream: int) -> dict:
    async with JitAgentClient(address) as client:
        async def one(s: int) -> list[float]:
            tasks = [Task(id=f"s{s}-{i}", prompt=TEXTS[(s + i) % len(TEXTS)],
                          verifier={"kind": "numeric", "expected": 0})
                     for i in range(tasks_per_stream)]
            seen, last = [], time.perf_counter()
            async for _ in client.stream(tasks, n=1, timeout=300):
                now = time.perf_counter()
                seen.append((now - last) * 1000)
                last = now
            return seen
        start = time.monotonic()
        per_task = [x for xs in await asyncio.gather(*(one(s) for s in range(count))) for x in xs]
        elapsed = time.monotonic() - start
    return {"tasks_per_s": len(per_task) / elapsed, "p50": statistics.median(per_task),
            "p99": float(np.percentile(per_task, 99)), "n": len(per_task)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--n", type=int, default=1, help="candidates per Synthesize request")
    args = parser.parse_args()
    port = free_port()
    data = tempfile.mkdtemp(prefix="jitagent-load-")
    server = subprocess.Popen([sys.executable, "-m", "jitagent", "serve", "--port", str(port), "--data-dir",
                               data,
                               "--meta-model", "scripted", "--no-dry-run", "--concurrency", "32",
                               "--max-queue", "256",
                               "--n", str(args.n)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    address = f"127.0.0.1:{port}"
    try:
        async def ready():
            async with JitAgentClient(address) as client:
                await client.wait_ready(180)
                for text in TEXTS:  # warm the embedding cache: the steady state repeats task texts
                    await client.synthesize([text], n=args.n)
                harness = (await client.list_harnesses(origin="seed")).harnesses[0].id
                for text in TEXTS[:6]:  # a confident incumbent for the `bench` task type
                    await client.report_harness_outcome(harness, text, 1.0, task_type="bench",
                                                        prompt_tokens=10, completion_tokens=10, wall_s=1.0)
        asyncio.run(ready())
        print(f"{date.today()} on {platform.node()} ({os.cpu_count()} cores), server and client in separate "
              "processes, "
              f"scripted instant model, n={args.n}, {args.seconds:.0f}s per row\n")
        print("| load | requests/s | p50 ms | p99 ms | requests | errors |")
        print("|---|---|---|---|---|---|")
        for typed, label in ((False, "synthesized"), (True, "reused incumbent")):
            for c in (1, 8, 32):
                r = asyncio.run(unary(address, c, args.seconds, args.n, typed))
                print(f"| Synthesize ({label}), concurrency {c} | {r['rps']:.0f} | {r['p50']:.1f} | "
                      f"{r['p99']:.1f} | "
                      f"{r['n']} | {r['errors']} |", flush=True)
        r = asyncio.run(streams(address, 32, 10))
        print(f"| StreamTasks, 32 streams x 10 tasks (execute + admit) | {r['tasks_per_s']:.0f} tasks/s | "
              f"{r['p50']:.1f} | "
              f"{r['p99']:.1f} | {r['n']} | 0 |")
    finally:
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
