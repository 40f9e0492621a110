"""Why an examples arm won or lost, per task type, read from a bench run's ledger and trajectories.

For each type: the best fixed seed's mean reward, the arm's, how many of the arm's units were shown
verified solutions and their mean reward against the units shown none, the harnesses it ran, and for the
units that lost reward against the best fixed seed on the same task, whether they were shown examples and
what they answered. Markdown on stdout.

Usage: python bench/examples_analysis.py bench/results/rg-qwen-examples [--arm jit_examples]
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from pathlib import Path
from statistics import mean

from jitagent.benchmark.ledger import Ledger, read_traces


def latest(rows) -> dict[tuple[str, str], dict]:
    """The last row per (arm, task) of the first repeat, as the ledger resumes."""
    return {(r["arm"], r["task_id"]): r for r in rows if r["repeat"] == 0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path)
    parser.add_argument("--arm", default="jit_examples")
    args = parser.parse_args()
    units = latest(Ledger(args.run / "results.jsonl").units.values())
    traces = latest(read_traces(args.run))
    fixed = sorted({a for a, _ in units if a.startswith("fixed:")})
    final = [r for (a, _), r in units.items() if a == args.arm]
    best = max(fixed, key=lambda a: mean(units[(a, r["task_id"])]["reward"] for r in final))
    by_type: dict[str, list[dict]] = defaultdict(list)
    for r in final:
        by_type[r["type"]].append(r)
    print(f"`{args.arm}` against `{best}` (the best fixed seed on these tasks), per type\n")
    print("| type | best fixed | arm | units shown examples | reward shown / not | harnesses run |")
    print("|---|---|---|---|---|---|")
    for kind, rows in sorted(by_type.items()):
        shown = [r for r in rows if r.get("examples")]
        unshown = [r for r in rows if not r.get("examples")]
        harnesses = Counter(traces[(args.arm, r["task_id"])]["harness"] for r in rows)
        print(f"| {kind} | {mean(units[(best, r['task_id'])]['reward'] for r in rows):.2f} "
              f"| {mean(r['reward'] for r in rows):.2f} | {len(shown)}/{len(rows)} "
              f"| {mean(r['reward'] for r in shown) if shown else float('nan'):.2f} / "
              f"{mean(r['reward'] for r in unshown) if unshown else float('nan'):.2f} "
              f"| {', '.join(f'{h} ×{n}' for h, n in harnesses.most_common(3))} |")
    print("\nUnits that lost reward against the best fixed seed on the same task:\n")
    for r in sorted(final, key=lambda r: (r["type"], r["task_id"])):
        base = units[(best, r["task_id"])]
        if r["reward"] < base["reward"]:
            trace = traces[(args.arm, r["task_id"])]
            print(f"- {r['task_id']}: {base['reward']:.2f} → {r['reward']:.2f}, {trace['harness']} "
                  f"({r['route']}), shown {r.get('examples', 0)}; answered {str(trace['answer'])[:80]!r} "
                  f"where {best} answered {str(traces.get((best, r['task_id']), {}).get('answer'))[:80]!r}")


if __name__ == "__main__":
    main()
