"""How few tokens a stream arm's reward could have cost, read from a stream run's ledger in hindsight: per
type, the cheapest harness of the run (the arm's own units and the fixed arms', a harness shown examples
counted apart) whose mean reward over the whole stream is within `--tolerance` of what the arm earned on
that type, over at least `--runs` units. Not a routing rule: it reads every answer of the stream. It tells
whether a token goal is out of routing's reach with these harnesses, or within it.

    python bench/token_floor.py bench/results/rg-stream --arm jit_examples --last 300
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from jitagent.benchmark.ledger import Ledger, total_tokens
from jitagent.benchmark.stats import best_fixed


@dataclass(frozen=True)
class TypeFloor:
    type: str
    tasks: int
    reward: float      # the arm's mean reward on the type's tasks
    tokens: float      # the arm's tokens a task there
    floor: float       # the cheapest harness's tokens a unit at that reward (the arm's own where none is)
    harness: str       # that harness ("": none cheaper at that reward)
    baseline: float    # the best fixed seed's tokens a task there


def tokens(rows: list[dict]) -> float:
    """Tokens a unit over the units whose count is known (NaN: none is)."""
    known = [t for t in map(total_tokens, rows) if t is not None]
    return statistics.fmean(known) if known else float("nan")


def harness_records(rows: list[dict]) -> dict[tuple[str, bool], list[dict]]:
    """Each harness's units of a type, shown examples or not (examples lengthen the prompt)."""
    by = defaultdict(list)
    for row in rows:
        by[(row["harness"], bool(row.get("examples")))].append(row)
    return by


def floors(ledger: Ledger, arm: str, last: int | None, tolerance: float, runs: int) -> list[TypeFloor]:
    """Per type, the arm over the last `last` stream positions (None: all) against the cheapest harness."""
    baseline = best_fixed(ledger)
    streamed = [r for r in ledger.units.values() if r.get("order") is not None]
    if not streamed:
        return []
    end = max(r["order"] for r in streamed) + 1
    window = [r for r in streamed if last is None or r["order"] >= end - last]
    result = []
    for kind in sorted({r["type"] for r in window if r["arm"] == arm}):
        mine = [r for r in window if r["arm"] == arm and r["type"] == kind]
        reward = statistics.fmean(r["reward"] for r in mine)
        spent = tokens(mine)
        pool = [r for r in streamed
                if r["type"] == kind and (r["arm"] == arm or r["arm"].startswith("fixed"))]
        cheaper = [(tokens(units), name) for (name, _), units in harness_records(pool).items()
                   if len(units) >= runs
                   and statistics.fmean(r["reward"] for r in units) >= reward - tolerance]
        floor, harness = min([(spent, ""), *cheaper])
        base = [r for r in window if r["arm"] == baseline and r["type"] == kind]
        result.append(TypeFloor(kind, len(mine), reward, spent, floor, harness, tokens(base)))
    return result


def report(rows: list[TypeFloor], arm: str) -> str:
    tasks = sum(r.tasks for r in rows)
    if not tasks:
        return f"no stream task of {arm} to read"

    def weighted(field: str) -> float:
        return sum(getattr(r, field) * r.tasks for r in rows) / tasks

    lines = [f"| type | tasks | {arm} reward | its tokens | cheapest at that reward | harness "
             "| best fixed's |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r.type} | {r.tasks} | {r.reward:.2f} | {r.tokens:,.0f} | {r.floor:,.0f} | "
              f"{r.harness[:16] or '(its own)'} | {r.baseline:,.0f} |" for r in rows]
    base = weighted("baseline")
    spent, floor = weighted("tokens"), weighted("floor")
    lines.append(f"\n{tasks} tasks: {arm} {spent:,.0f} tokens a task ({spent / base:.2f}x the best fixed "
                 f"seed's {base:,.0f}); the floor at the same reward per type {floor:,.0f} "
                 f"({floor / base:.2f}x)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a stream run's folder (its results.jsonl)")
    parser.add_argument("--arm", default="jit_examples")
    parser.add_argument("--last", type=int, default=None, help="only the last N stream positions")
    parser.add_argument("--tolerance", type=float, default=0.02, help="reward a cheaper harness may lack")
    parser.add_argument("--runs", type=int, default=5, help="the fewest units a harness's record needs")
    args = parser.parse_args(argv)
    ledger = Ledger(args.run / "results.jsonl")
    if not ledger.rows(args.arm):
        parser.error(f"{args.run}/results.jsonl has no rows of arm {args.arm!r}")
    print(report(floors(ledger, args.arm, args.last, args.tolerance, args.runs), args.arm))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
