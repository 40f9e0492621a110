"""Where a bench run's arms gain and lose per task type, and whether the warm-up could have told.

Reads only the ledger (`results.jsonl`). First table: each `final` arm's mean reward per type, and the
per-type best of those arms chosen in hindsight (on `final` itself: the room a per-cluster choice among
the run's arms has, not a competitor). Second table: each warmed harness's mean on `learn` per type beside
the fixed seeds' on `final` — where the two disagree, no router reading the warm-up chooses right.
Markdown on stdout.

Usage: python bench/arm_choice.py bench/results/rg-qwen-adapters
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from statistics import mean

WARM_PREFIXES = ("warm:", "warm-examples:")


def means(rows: list[dict], arms) -> dict[str, dict[str, float]]:
    """Mean reward per type per arm, the last row of each (arm, task) of the first repeat."""
    last = {(r["arm"], r["task_id"]): r for r in rows if r["repeat"] == 0 and arms(r["arm"])}
    by: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (arm, _), r in last.items():
        by[r["type"]][arm].append(r["reward"])
    return {kind: {arm: mean(v) for arm, v in arms_.items()} for kind, arms_ in by.items()}


def table(title: str, per_type: dict[str, dict[str, float]], columns: list[str]) -> None:
    print(f"{title}\n\n| type | {' | '.join(columns)} |\n|---|{'---|' * len(columns)}")
    for kind in sorted(per_type):
        cells = (f"{per_type[kind][c]:.2f}" if c in per_type[kind] else "–" for c in columns)
        print(f"| {kind} | {' | '.join(cells)} |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path)
    args = parser.parse_args()
    with open(args.run / "results.jsonl") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    final = means(rows, lambda a: not a.startswith(("score:", *WARM_PREFIXES)))
    arms = sorted({a for per in final.values() for a in per})
    table("Mean reward on `final` per type", final, arms)
    counts = defaultdict(int)
    for r in {(r["arm"], r["task_id"]): r for r in rows if r["repeat"] == 0}.values():
        if r["arm"] == arms[0]:
            counts[r["type"]] += 1
    best = {kind: max(per, key=per.get) for kind, per in final.items()}
    total = sum(final[k][best[k]] * counts[k] for k in final) / sum(counts.values())
    print(f"Per-type best arm in hindsight: {total:.1%} "
          f"({', '.join(f'{k} → {a}' for k, a in sorted(best.items()))})\n")
    warm = means(rows, lambda a: a.startswith(WARM_PREFIXES))
    fixed = [a for a in arms if a.startswith("fixed:")]
    both = {k: {**warm.get(k, {}), **{f"{a} (final)": v for a, v in final[k].items() if a in fixed}}
            for k in final}
    table("The warm-up on `learn` beside the fixed seeds on `final`", both,
          sorted({a for per in warm.values() for a in per}) + [f"{a} (final)" for a in fixed])


if __name__ == "__main__":
    main()
