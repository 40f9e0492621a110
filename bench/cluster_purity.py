"""Where an untyped stream's tasks were clustered: for each task type (known to the ledger, never sent to the
bank), how many of its stream tasks joined its own type's cluster (a warm-up cluster reached through the
nearest past tasks' majority), another type's, or a new `auto:` cluster, and what the arm earned in each.

    python bench/cluster_purity.py RUN --arm jit_examples   # RUN holds results.jsonl and <arm>-stream.db
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
from collections import defaultdict
from contextlib import closing
from pathlib import Path

from jitagent.benchmark.ledger import Ledger


def clusters(bank: Path) -> dict[str, str]:
    """Each task's cluster, from its first run in the bank (read-only)."""
    with closing(sqlite3.connect(f"file:{bank}?mode=ro", uri=True)) as db:
        rows = db.execute("SELECT task_id, cluster FROM runs ORDER BY created_at").fetchall()
    first: dict[str, str] = {}
    for task_id, cluster in rows:
        first.setdefault(task_id, cluster)
    return first


def kind(cluster: str, task_type: str) -> str:
    if cluster == f"type:{task_type}":
        return "own type"
    return "auto" if cluster.startswith("auto:") else "other"


def purity(folder: Path, arm: str) -> str:
    rows = [r for r in Ledger(folder / "results.jsonl").rows(arm) if r.get("order") is not None]
    joined = clusters(folder / f"{arm}-stream.db")
    table: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        cluster = joined.get(row["task_id"])
        if cluster is not None:
            table[row["type"]][kind(cluster, row["type"])].append(row["reward"])
    kinds = ("own type", "other", "auto")
    counted = sum(len(v) for t in table.values() for v in t.values())
    lines = [f"{arm}: {counted} stream tasks with a run in the bank, by the cluster they joined (tasks, "
             "mean reward)", "",
             "| type | " + " | ".join(kinds) + " |", "|---|" + "---|" * len(kinds)]
    totals: dict[str, list[float]] = defaultdict(list)
    for task_type in sorted(table):
        cells = []
        for k in kinds:
            rewards = table[task_type][k]
            totals[k] += rewards
            cells.append(f"{len(rewards)} ({statistics.fmean(rewards):.2f})" if rewards else "0")
        lines.append(f"| {task_type} | " + " | ".join(cells) + " |")
    lines.append("| all | " + " | ".join(f"{len(totals[k])} ({statistics.fmean(totals[k]):.2f})"
                                         if totals[k] else "0" for k in kinds) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--arm", default="jit_examples")
    args = parser.parse_args()
    print(purity(args.folder, args.arm))


if __name__ == "__main__":
    main()
