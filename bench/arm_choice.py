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
from collections import defaultdict
from pathlib import Path
from statistics import mean

from jitagent.benchmark.ledger import Ledger

WARM_PREFIXES = ("warm:", "warm-examples:")


def rewards(ledger: Ledger, arms: list[str]) -> dict[str, dict[str, list[float]]]:
    """Rewards per type per arm, first repeat (the ledger keeps each unit's last row)."""
    by: dict[str, dict[str, list[float]]] = defaultdict(dict)
    for arm in arms:
        for r in ledger.rows(arm):
            if r["repeat"] == 0:
                by[r["type"]].setdefault(arm, []).append(r["reward"])
    return by


def table(title: str, per_type: dict[str, dict[str, list[float]]], columns: list[str]) -> None:
    print(f"{title}\n\n| type | {' | '.join(columns)} |\n|---|{'---|' * len(columns)}")
    for kind in sorted(per_type):
        cells = (f"{mean(per_type[kind][c]):.2f}" if c in per_type[kind] else "–" for c in columns)
        print(f"| {kind} | {' | '.join(cells)} |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path)
    args = parser.parse_args()
    ledger = Ledger(args.run / "results.jsonl")
    arms = sorted(a for a in ledger.arms() if not a.startswith(("score:", *WARM_PREFIXES)))
    final = rewards(ledger, arms)
    table("Mean reward on `final` per type", final, arms)
    best = {kind: max(per, key=lambda a: mean(per[a])) for kind, per in final.items()}
    solved = sum(sum(final[k][a]) for k, a in best.items()) / sum(len(final[k][a]) for k, a in best.items())
    print(f"Per-type best arm in hindsight: {solved:.1%} "
          f"({', '.join(f'{k} → {a}' for k, a in sorted(best.items()))})\n")
    warmed = sorted(a for a in ledger.arms() if a.startswith(WARM_PREFIXES))
    fixed = [a for a in arms if a.startswith("fixed:")]
    beside = rewards(ledger, warmed)
    for kind, per in final.items():
        beside[kind] |= {f"{a} (final)": per[a] for a in fixed if a in per}
    table("The warm-up on `learn` beside the fixed seeds on `final`", beside,
          warmed + [f"{a} (final)" for a in fixed])


if __name__ == "__main__":
    main()
