"""Statistics over a ledger: success with bootstrap intervals over tasks, paired differences against
the best fixed seed on the same tasks, costs, routes, and the hindsight oracle."""

from __future__ import annotations

import math
import random
import statistics
from collections import defaultdict

from harness_bank.router import ROUTES
from jitagent.benchmark.ledger import Ledger, total_tokens

HINDSIGHT = "hindsight oracle"


def bootstrap_ci(per_task: list[float], rounds: int = 2000, seed: int = 0) -> tuple[float, float]:
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(per_task, k=len(per_task))) for _ in range(rounds))
    return means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1]


def per_task(rows: list[dict]) -> dict[str, float]:
    """Mean reward per task over its repeats."""
    rewards: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        rewards[r["task_id"]].append(r["reward"])
    return {t: statistics.fmean(v) for t, v in rewards.items()}


def known_mean(units: list[dict], key: str) -> float | None:
    """The mean over the units that know `key`; how many do not is reported beside it."""
    values = [r[key] for r in units if r.get(key) is not None]
    return statistics.fmean(values) if values else None


def paired_difference(arm: list[dict], baseline: list[dict], rounds: int = 2000,
                      seed: int = 0) -> tuple[float, float, float, int]:
    """Mean per-task difference arm − baseline over the tasks both ran, with a paired bootstrap 95%
    interval (tasks resampled together, so task difficulty cancels); and how many tasks were paired."""
    a, b = per_task(arm), per_task(baseline)
    diffs = [a[t] - b[t] for t in sorted(a.keys() & b.keys())]
    if not diffs:
        return math.nan, math.nan, math.nan, 0
    low, high = bootstrap_ci(diffs, rounds, seed)
    return statistics.fmean(diffs), low, high, len(diffs)


def mean_tokens(rows: list[dict]) -> float:
    """Mean tokens for ranking seeds by cost: an unknown count never passes for the cheapest."""
    if not rows or any(r["execution_tokens"] is None for r in rows):
        return math.inf
    return statistics.fmean(r["execution_tokens"] for r in rows)


def rank(rows: list[dict]) -> tuple[float, float]:
    """Sort key of a seed's runs, best first: higher mean reward, then fewer tokens."""
    return -statistics.fmean(r["reward"] for r in rows), mean_tokens(rows)


def best_fixed(ledger: Ledger) -> str | None:
    """The fixed seed with the best success on `final` (the strongest single-scaffold comparator)."""
    fixed = [a for a in ledger.arms() if a.startswith("fixed:")]
    return min(fixed, key=lambda a: rank(ledger.rows(a)), default=None)


def hindsight_rows(ledger: Ledger) -> tuple[list[dict], dict[str, str]]:
    """The best fixed seed per task type chosen on `final` itself: the upper bound of routing among
    the seeds that ran there, not a competitor (it reads the answers it is scored on)."""
    fixed = {arm: ledger.rows(arm) for arm in ledger.arms() if arm.startswith("fixed:")}
    choice = best_per_type(fixed)
    rows = [r | {"arm": HINDSIGHT, "route": "oracle"}
            for t, arm in choice.items() for r in fixed[arm] if r["type"] == t]
    return rows, {t: a.removeprefix("fixed:") for t, a in choice.items()}


def best_per_type(rows_by_arm: dict[str, list[dict]]) -> dict[str, str]:
    """The arm whose rows rank best on each task type (`rank`: higher mean reward, then fewer tokens)."""
    by_type: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
    for arm, rows in rows_by_arm.items():
        for r in rows:
            by_type[r["type"]][arm].append(r)
    return {t: min(arms, key=lambda a: rank(arms[a])) for t, arms in by_type.items()}


def wall_percentiles(units: list[dict]) -> tuple[float, float, float]:
    """p50, p99 and the maximum of the units' wall seconds (p99 interpolated between the two nearest)."""
    walls = sorted(r["wall_s"] for r in units)
    if len(walls) == 1:
        return walls[0], walls[0], walls[0]
    return (statistics.median(walls), statistics.quantiles(walls, n=100, method="inclusive")[98], walls[-1])


def summarize(ledger: Ledger, arms: list[str], extra: dict[str, list[dict]] | None = None) -> list[dict]:
    """One row per arm that ran. `extra`: derived arms (the hindsight oracle) by name."""
    baseline_arm = best_fixed(ledger)
    baseline = ledger.rows(baseline_arm) if baseline_arm else []
    out = []
    for arm in arms:
        units = (extra or {}).get(arm) or ledger.rows(arm)
        if not units:
            continue
        means = list(per_task(units).values())
        low, high = bootstrap_ci(means)

        candidates = sum(r.get("candidates", 0) for r in units)
        jit = arm.startswith("jit")
        paired = jit or arm.startswith("ablation:")
        out.append({
            "arm": arm, "success": statistics.fmean(means), "ci": (low, high), "tasks": len(means),
            "strict": statistics.fmean(bool(r["passed"]) for r in units),  # full marks, no partial credit
            "repeats": max(r["repeat"] for r in units) + 1,
            "synthesis_tokens": known_mean(units, "synthesis_tokens"),
            "repair_tokens": known_mean(units, "repair_tokens"),
            "execution_tokens": known_mean(units, "execution_tokens"), "wall_s": known_mean(units, "wall_s"),
            "broken_rate": sum(r.get("broken", 0) for r in units) / candidates if candidates else 0.0,
            "routes": {k: sum(r["route"] == k for r in units) / len(units) for k in ROUTES} if jit else None,
            "vs_best": paired_difference(units, baseline) if paired and baseline else None,
            "infra_errors": sum(r["error"] is not None for r in units),
            "out_of_budget": sum(bool(r.get("budget_exhausted")) for r in units) / len(units),
            "unknown_tokens": sum(total_tokens(r) is None for r in units)})
    return out

