"""Two bench ledgers' `score` screens, seed by seed on the same tasks: did a change alter any decision?

Temperature-0 seeds (and sampling seeds at their fixed seed) must earn the same reward with the same
tokens on both sides; a run cut by the wall budget may differ (how far it got depends on the machine).
Usage: python bench/paired_screen.py BEFORE_DIR AFTER_DIR   (each holding a results.jsonl)
"""

import argparse
import json
from pathlib import Path

from jitagent.harness.seeds import load_seeds


def screen(run: Path) -> dict[tuple[str, str], dict]:
    rows = (json.loads(line) for line in (run / "results.jsonl").open())
    return {(r["arm"], r["task_id"]): r for r in rows if r["arm"].startswith("score:")}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args()
    before, after = screen(args.before), screen(args.after)
    print(f"| seed | success before ({args.before.name}) | after ({args.after.name}) | same reward | "
          f"same tokens | differing tokens: cut by the budget on one side or both |")
    print("|---|---|---|---|---|---|")
    totals = [0] * 6
    for name in load_seeds():
        pairs = [(before[k], after[k]) for k in sorted(after) if k[0] == f"score:{name}" and k in before]
        differ = [(a, b) for a, b in pairs if a["execution_tokens"] != b["execution_tokens"]]
        row = (sum(a["reward"] for a, _ in pairs), sum(b["reward"] for _, b in pairs),
               sum(a["reward"] == b["reward"] for a, b in pairs), len(pairs) - len(differ),
               sum(a["budget_exhausted"] or b["budget_exhausted"] for a, b in differ), len(differ))
        totals = [t + v for t, v in zip(totals, row)]
        n = len(pairs)
        print(f"| {name} | {row[0]:g}/{n} | {row[1]:g}/{n} | {row[2]}/{n} | {row[3]}/{n} "
              f"| {row[4]}/{row[5]} |")
    n = sum(1 for k in after if k in before)
    print(f"| **all** | {totals[0]:g}/{n} | {totals[1]:g}/{n} | {totals[2]}/{n} | {totals[3]}/{n} | "
          f"{totals[4]}/{totals[5]} |")


if __name__ == "__main__":
    main()
