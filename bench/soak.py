"""One server under S concurrent task streams for M minutes: does anything grow that should not?

The server is the real one (`JitAgentServer`, in a child process of its own, SQLite bank) with scripted
models that answer in --latency-ms: the meta-model writes schema-valid harnesses, the solver writes a
program (`print(0)`) where a harness asks for code and answers once it has seen the output, so every
task takes the sandbox (a uid leased, a cgroup made and removed, a workspace mounted) as a real one
does. Every 10 s it samples the server's RSS, open descriptors and threads, the sandbox uids it holds
(its flocks on /run/jitagent/uids), the run cgroups that exist under it and the sandboxed processes
alive, and the p50 / p99 latency of the tasks finished in those 10 s (from sending a task on its
stream to its result). After a warm-up (a quarter of the run, at most a minute) the first sample is
the baseline: `rss_mb_start`, `fds_start`; the last is `rss_mb_end`, `fds_end`; `idle_after` is a
sample once the streams have closed (no uid, cgroup or sandboxed process may be left). Writes
OUT/soak-DATE/summary.json (the samples inside) and soak.png. Everything stays on 127.0.0.1.
Usage: python bench/soak.py [--streams 32] [--minutes 30] [--latency-ms 20] [--out bench/results]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

SAMPLE_S = 10.0
PROGRAM, ANSWER = "print(6 * 7)", 42
TEXTS = [f"What is six times seven (case {i})?" for i in range(64)]
TYPES = ("soak-a", "soak-b", "soak-c", "soak-d")


def coder(latency_s: float):
    """A scripted solver that writes a program, then answers from what it printed. Only the program's
    output is right (ANSWER; the program's text ends in another number), so the router learns to run
    harnesses that run code, and every task goes through the sandbox."""
    from jitagent.models.scripted import ScriptedModel, schema_example

    def reply(messages: list[dict], schema: dict | None = None) -> str:
        last = messages[-1]
        if schema:
            return json.dumps(schema_example(schema))
        if last["role"] == "assistant":  # a prefill: the rest of the program
            return f"{PROGRAM}\n```" if last["content"].startswith("```") else PROGRAM
        if "Observation:" in last["content"]:
            return f"Final answer: {ANSWER}"
        return f"```python\n{PROGRAM}\n```"
    model = ScriptedModel(reply, name="scripted-coder", latency_s=latency_s)
    model.wants_schema = True
    return model


def serve(port: int, data_dir: Path, latency_s: float, concurrency: int) -> None:
    """The child: a real server whose models are scripted (the one thing `jitagent serve` cannot choose)."""
    from jitagent.config.logs import configure
    from jitagent.doors.server import JitAgentServer, ServerConfig
    from jitagent.improvement.synthesis.synthesize import SynthesisConfig
    from jitagent.models.scripted import instant_model
    from jitagent.solving.assembly import pipeline_on
    from jitagent.solving.config import PipelineConfig

    configure("json")
    config = ServerConfig(port=port, data_dir=data_dir, concurrency=concurrency,
                          pipeline=PipelineConfig(synthesis=SynthesisConfig(n=1, dry_run=False)))

    def build(config: ServerConfig):
        return pipeline_on(config.data_dir / "bank.db", instant_model(latency_s), coder(latency_s),
                           config.pipeline, cache_dir=config.data_dir)
    asyncio.run(JitAgentServer(config, build=build).serve_forever())


def proc_status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {k: v.strip() for k, _, v in (line.partition(":") for line in lines)}


def held_uids(pid: int) -> int:
    """Sandbox uids the server holds: its flocks on the uid lock files."""
    from jitagent.sandbox.host import UID_LOCKS

    if not UID_LOCKS.exists():
        return 0
    inodes = {f.stat().st_ino for f in UID_LOCKS.iterdir()}
    held = 0
    for line in Path("/proc/locks").read_text().splitlines():
        parts = line.split()
        if len(parts) > 5 and parts[1] == "FLOCK" and parts[4] == str(pid):
            held += int(parts[5].rsplit(":", 1)[1]) in inodes
    return held


def run_cgroups(pid: int) -> int:
    """Run cgroups that exist under the server's own cgroups (each run removes its own)."""
    from jitagent.sandbox.host import CGROUP_PREFIX, CGROUP_ROOT

    count = 0
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controllers in ("memory", "pids", ""):
            parent = CGROUP_ROOT / (controllers or "") / path.lstrip("/")
            if parent.is_dir():
                count += sum(1 for _ in parent.glob(f"{CGROUP_PREFIX}{pid}.*"))
    return count


def sandboxed_processes(server: int) -> int:
    """Processes of the server's sandboxes alive: under a sandbox uid, the server among their ancestors."""
    from jitagent.sandbox.host import UID_POOL

    statuses = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                statuses[int(entry.name)] = proc_status(int(entry.name))
            except OSError:  # gone meanwhile
                continue
    alive = 0
    for status in statuses.values():
        if int(status["Uid"].split()[0]) in UID_POOL:
            parent = int(status["PPid"])
            while parent > 1 and parent != server and parent in statuses:
                parent = int(statuses[parent]["PPid"])
            alive += parent == server
    return alive


def sample(pid: int, at: float, latencies: list[float]) -> dict:
    status = proc_status(pid)
    window = sorted(latencies)
    latencies.clear()
    return {"at_s": round(at, 1), "rss_mb": round(int(status["VmRSS"].split()[0]) / 1024, 1),
            "fds": len(os.listdir(f"/proc/{pid}/fd")), "threads": int(status["Threads"]),
            "uids_held": held_uids(pid), "run_cgroups": run_cgroups(pid),
            "sandboxed": sandboxed_processes(pid),
            "tasks": len(window),
            "p50_ms": round(statistics.median(window) * 1000, 1) if window else None,
            "p99_ms": round(statistics.quantiles(window, n=100, method="inclusive")[98] * 1000, 1)
            if len(window) > 1 else None}


async def stream(client, number: int, until: float, latencies: list[float], errors: list[str]) -> None:
    """One stream: a task, its result, the next task, until the time is up."""
    from jitagent.protocol.tasks import task_to_proto
    from jitagent.tasks.task import Task
    from jitagent.v1 import jitagent_pb2 as pb

    answered = asyncio.Queue()
    sent: list[float] = []

    async def requests():
        i = number
        while time.monotonic() < until:
            task = Task(id=f"s{number}-{i}", prompt=TEXTS[i % len(TEXTS)], type=TYPES[i % len(TYPES)],
                        verifier={"kind": "numeric", "expected": ANSWER})
            sent.append(time.monotonic())
            yield pb.StreamTasksRequest(task=task_to_proto(task), n=1, request_id=f"soak-{number}-{i}")
            await answered.get()
            i += 1
    try:
        async for response in client.stub.StreamTasks(requests(), metadata=client.metadata):
            latencies.append(time.monotonic() - sent[-1])
            if response.HasField("error"):
                errors.append(response.error.message[:200])
            answered.put_nowait(None)
    except Exception as exc:  # the stream broke: counted, and the run goes on without it
        errors.append(f"stream {number}: {type(exc).__name__}: {exc}"[:200])


async def soak(args, port: int, pid: int) -> dict:
    from jitagent.protocol.client import JitAgentClient

    warmup = min(60.0, args.minutes * 60 / 4)
    latencies: list[float] = []
    errors: list[str] = []
    samples = []
    async with JitAgentClient(f"127.0.0.1:{port}") as client:
        await client.wait_ready(600)
        start = time.monotonic()
        until = start + args.minutes * 60
        streams = [asyncio.create_task(stream(client, number, until, latencies, errors))
                   for number in range(args.streams)]
        while time.monotonic() < until:
            await asyncio.sleep(SAMPLE_S)
            samples.append(sample(pid, time.monotonic() - start, latencies))
            print(json.dumps(samples[-1]), file=sys.stderr, flush=True)
        await asyncio.wait_for(asyncio.gather(*streams), 120)
        await asyncio.sleep(SAMPLE_S / 2)
        idle = sample(pid, time.monotonic() - start, [])  # no task in flight: what is left is kept
    after = [s for s in samples if s["at_s"] >= warmup] or samples[-1:]
    first, last = after[0], after[-1]
    done = [s for s in samples if s["tasks"]]
    return {"streams": args.streams, "minutes": args.minutes, "errors": len(errors),
            "error_examples": errors[:10],
            "tasks": sum(s["tasks"] for s in samples), "warmup_s": warmup,
            "rss_mb_start": first["rss_mb"], "rss_mb_end": last["rss_mb"], "fds_start": first["fds"],
            "fds_end": last["fds"], "threads_start": first["threads"], "threads_end": last["threads"],
            "idle_after": {k: v for k, v in idle.items() if k not in ("at_s", "tasks", "p50_ms", "p99_ms")},
            "uids_held_max": max(s["uids_held"] for s in samples),
            "run_cgroups_max": max(s["run_cgroups"] for s in samples),
            "p50_ms_median": statistics.median(s["p50_ms"] for s in done) if done else None,
            "p99_ms_max": max((s["p99_ms"] for s in done if s["p99_ms"] is not None), default=None),
            "latency_ms": args.latency_ms, "concurrency": args.concurrency, "samples": samples}


def plot(summary: dict, path: Path, command: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = summary["samples"]
    at = [s["at_s"] / 60 for s in samples]
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    panels = [(axes[0][0], "MB", [("rss_mb", "RSS")]), (axes[0][1], "count", [("fds", "open fds"),
                                                                              ("threads", "threads")]),
              (axes[1][0], "count", [("uids_held", "sandbox uids held"), ("run_cgroups", "run cgroups"),
                                     ("sandboxed", "sandboxed processes")]),
              (axes[1][1], "ms", [("p50_ms", "p50 latency"), ("p99_ms", "p99 latency")])]
    for ax, unit, series in panels:
        for key, label in series:
            ax.plot(at, [s[key] for s in samples], label=label)
        ax.axvline(summary["warmup_s"] / 60, color="gray", linestyle=":", linewidth=1)
        ax.set_ylabel(unit)
        ax.legend(fontsize=7)
    for ax in axes[1]:
        ax.set_xlabel("minutes (dotted: end of warm-up)")
    fig.suptitle(f"{summary['streams']} streams for {summary['minutes']} min: {summary['tasks']} tasks, "
                 f"{summary['errors']} errors")
    fig.text(0.01, 0.01, command, fontsize=6)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=32)
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--latency-ms", type=float, default=20, help="the scripted models' wait per call")
    parser.add_argument("--concurrency", type=int, default=4, help="the server's --concurrency")
    parser.add_argument("--out", type=Path, default=Path("bench/results"))
    parser.add_argument("--serve", nargs=2, metavar=("PORT", "DATA_DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(int(args.serve[0]), Path(args.serve[1]), args.latency_ms / 1000, args.concurrency)
        return 0
    from jitagent.fleet.services import free_port

    port, tmp = free_port(), Path(tempfile.mkdtemp(prefix="jitagent-soak-"))
    with (tmp / "server.log").open("w") as log:
        server = subprocess.Popen([sys.executable, __file__, "--serve", str(port), str(tmp / "data"),
                                   "--latency-ms", str(args.latency_ms),
                                   "--concurrency", str(args.concurrency)],
                                  stdout=log, stderr=subprocess.STDOUT)
    try:
        summary = asyncio.run(soak(args, port, server.pid))
    finally:
        server.terminate()
        server.wait(60)
    command = "python bench/soak.py " + " ".join(sys.argv[1:])
    summary |= {"command": command, "date": str(date.today()), "server_log": str(tmp / "server.log"),
                "host": f"{platform.node()} ({os.cpu_count()} cores)"}
    out = args.out / f"soak-{date.today()}"
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    plot(summary, out / "soak.png", command)
    print(json.dumps({k: v for k, v in summary.items() if k != "samples"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
