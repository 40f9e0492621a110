"""Reads a `jitagent bench` results folder and says why the JIT arms won or lost against the best
fixed seed: routes, what each route earned, tokens against the best seed, per-type differences,
what synthesized variants earned against their parents, and the synthesis prompt over the stream.

    python bench/router_analysis.py bench/results/rg-qwen-router
"""

from __future__ import annotations

import argparse
import statistics
from collections import Counter, defaultdict
from pathlib import Path

from harness_bank.router import ROUTES
from jitagent.benchmark.ledger import Ledger, read_traces, total_tokens
from jitagent.benchmark.stats import best_fixed, per_task


def mean(values) -> float:
    values = list(values)
    return statistics.fmean(values) if values else float("nan")


def analyse(folder: Path) -> str:
    ledger = Ledger(folder / "results.jsonl")
    baseline = best_fixed(ledger)
    base_rows = ledger.rows(baseline)
    base_tokens = mean(r["execution_tokens"] for r in base_rows)
    base_by_type = defaultdict(list)
    for r in base_rows:
        base_by_type[r["type"]].append(r["reward"])
    lines = [f"best fixed seed: {baseline} ({mean(r['reward'] for r in base_rows):.1%}, "
             f"{base_tokens:.0f} tokens/task)"]
    for arm in ("jit_warm", "jit_stream", "jit_static"):
        rows = ledger.rows(arm)
        if not rows:
            continue
        known = [total_tokens(r) for r in rows if total_tokens(r) is not None]
        lines.append(f"\n{arm}: {len(rows)} units, {mean(r['reward'] for r in rows):.1%}, "
                     f"{mean(known):.0f} tokens/unit ({mean(known) / base_tokens:.2f}x the best seed's), "
                     f"{len(rows) - len(known)} units with unknown tokens")
        for route in ROUTES:
            picked = [r for r in rows if r["route"] == route]
            if picked:
                known = [total_tokens(r) for r in picked if total_tokens(r) is not None]
                lines.append(f"  {route:11s} {len(picked) / len(rows):5.1%} of units, reward "
                             f"{mean(r['reward'] for r in picked):.2f}, {mean(known):.0f} tokens, "
                             f"{mean(r['wall_s'] for r in picked):.1f} s, out of budget "
                             f"{sum(r['budget_exhausted'] for r in picked)}")
        by_type = defaultdict(list)
        for r in rows:
            by_type[r["type"]].append(r["reward"])
        diffs = sorted(((mean(v) - mean(base_by_type[t]), t) for t, v in by_type.items()), reverse=True)
        lines.append("  per type vs the best seed: " + ", ".join(f"{t} {d:+.2f}" for d, t in diffs))
        synth = [r for r in rows if r["synthesis_tokens"] and r["order"] is not None]
        if synth:  # does the synthesis prompt stay flat over the stream?
            length = max(r["order"] for r in rows) + 1
            thirds = [[r["synthesis_tokens"] for r in synth if 3 * r["order"] // length == i]
                      for i in range(3)]
            lines.append("  synthesis tokens per synthesizing unit over the stream's thirds: "
                         + " → ".join(f"{mean(t):.0f} ({len(t)})" for t in thirds))
        lines += _harnesses(folder, arm, per_task(base_rows))
    return "\n".join(lines)


def _harnesses(folder: Path, arm: str, baseline: dict[str, float]) -> list[str]:
    """Which harnesses the arm ran (by root seed), what they earned; synthesis prompt over the stream."""
    traces = [t for t in read_traces(folder) if t["arm"] == arm]
    if not traces:
        return []
    by_harness = defaultdict(list)
    for t in traces:
        by_harness[t.get("harness", "?")].append(t["reward"])
    top = sorted(by_harness.items(), key=lambda kv: -len(kv[1]))[:10]
    lines = ["  harnesses run (units, mean reward): " + ", ".join(f"{h} ({len(v)}, {mean(v):.2f})"
                                                                 for h, v in top)]
    variants = [t for t in traces if t.get("route") == "synthesized"]
    if variants:
        won = sum(t["reward"] > baseline.get(t["task_id"], 0.0) for t in variants)
        lost = sum(t["reward"] < baseline.get(t["task_id"], 0.0) for t in variants)
        lines.append(f"  synthesized units: {len(variants)}, "
                     f"mean reward {mean(t['reward'] for t in variants):.2f}; "
                     f"against the best seed on the same task: {won} better, {lost} worse")
    counts = Counter(t.get("route") for t in traces)
    lines.append(f"  routes in trajectories: {dict(counts)}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    print(analyse(parser.parse_args().folder))


if __name__ == "__main__":
    main()
