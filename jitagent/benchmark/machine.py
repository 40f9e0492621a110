"""How fast this machine runs the solver: a fixed probe request, timed, so that a budget in seconds can mean
the same model time on any machine. Budgets are in seconds and machines of one kind differ: a stream resumed
on a machine whose probe took 7.5 s, against 4.8 s on the one its baseline was recorded on, ran 11% of its
units out of budget where it had run 2% (BENCHMARKS.md, issue 43)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

# A fixed request, prefill and decoding both.
PROBE = "List the numbers from 1 to 40 in words, one per line, then say how many letters each one has."


async def probe_seconds(model, repeats: int = 3) -> float:
    """The fastest of a few runs of the probe (each with its own first line, so no prompt cache helps)."""
    walls = []
    for i in range(repeats + 1):  # the first call loads the model and warms its caches: not counted
        start = time.monotonic()
        await model.complete([{"role": "user", "content": f"Round {i}. {PROBE}"}], max_tokens=160)
        walls.append(time.monotonic() - start)
    return round(min(walls[1:]), 3)


def scaled_budget(budget_s: float, probe_s: float, reference_probe_s: float) -> float:
    """`budget_s` of the reference machine's model time (its probe took `reference_probe_s`) in this
    machine's seconds (its probe took `probe_s`): more on a slower machine, less on a faster one."""
    return budget_s * probe_s / reference_probe_s


async def slowness(model, reference_probe_s: float, budget_s: float, log: Path) -> float:
    """This machine's probe over the reference's: a unit's `budget_s` of the reference's model time is
    `budget_s` times this here. Each measure is appended to `log` (one JSON line a start) and said."""
    probe_s = await probe_seconds(model)
    unit_s = scaled_budget(budget_s, probe_s, reference_probe_s)  # what the log and the line say
    said = {"at": time.time(), "probe_s": probe_s, "reference_probe_s": reference_probe_s,
            "budget_s": budget_s, "unit_budget_s": round(unit_s, 2)}
    with log.open("a") as f:
        f.write(json.dumps(said) + "\n")
    print(f"probe {probe_s:.2f} s against {reference_probe_s:g} s: {unit_s:.1f} s a unit", file=sys.stderr,
          flush=True)
    return unit_s / budget_s
