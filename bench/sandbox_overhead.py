"""What isolation costs per run: `python -c pass` as a bare subprocess, under the fallback launcher
(hand-rolled namespaces) and under bubblewrap, each with the full per-run work (uid lease, cgroups,
handing the workspace over, clearing its /tmp). Interleaved round-robin in one process so the arms
share the machine's noise; median and p90 of N runs each. Also the cost of a workspace (a tmpfs
mount and its removal), paid once per task, not per run.

Usage: sudo python bench/sandbox_overhead.py [--runs 50]
"""

import argparse
import asyncio
import os
import statistics
import time

import jitagent.sandbox.launch as sandbox
from jitagent.sandbox.launch import SandboxLimits, Workspace, sandbox_python

PROGRAM = [sandbox_python(), "-c", "pass"]


async def bare() -> None:
    proc = await asyncio.create_subprocess_exec(*PROGRAM, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    await proc.communicate()
    assert proc.returncode == 0


def confined(use_bwrap: bool, workspace: Workspace):
    async def run() -> None:
        sandbox.bwrap_works = lambda: use_bwrap  # the arm decides, not the probe
        result = await workspace.run(PROGRAM, SandboxLimits())
        assert result.ok and ("bwrap" in result.confinement) == use_bwrap, result
    return run


async def timed(arm) -> float:
    start = time.perf_counter()
    await arm()
    return (time.perf_counter() - start) * 1000


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


async def main(runs: int) -> None:
    if not sandbox.bwrap_works():
        raise SystemExit("bwrap cannot confine runs here: nothing to compare (install bubblewrap, run as "
                         "root)")
    with Workspace() as ws_fallback, Workspace() as ws_bwrap:
        arms = {"bare subprocess": bare, "fallback launcher": confined(False, ws_fallback),
                "bwrap": confined(True, ws_bwrap)}
        for arm in arms.values():  # warm-up: imports, page cache
            await arm()
        times = {name: [] for name in arms}
        for _ in range(runs):
            for name, arm in arms.items():
                times[name].append(await timed(arm))
    workspace_ms = []
    for _ in range(runs):
        start = time.perf_counter()
        Workspace({"a.txt": "x"}).close()
        workspace_ms.append((time.perf_counter() - start) * 1000)
    base = statistics.median(times["bare subprocess"])
    print(f"`python -c pass`, {runs} runs per arm, interleaved; {os.cpu_count()} cores; uid {os.geteuid()}\n")
    print("| arm | median ms | p90 ms | overhead over bare (median) |")
    print("|---|---|---|---|")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"| {name} | {median:.1f} | {p90(values):.1f} | {median - base:+.1f} ms |")
    print(f"\nworkspace (tmpfs mount, one file, unmount): median {statistics.median(workspace_ms):.2f} ms, "
          f"p90 {p90(workspace_ms):.2f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    asyncio.run(main(parser.parse_args().runs))
