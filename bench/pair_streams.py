"""Pair one stream arm of two benchmark runs over the same suite, task by task: success, the paired
difference (new − old, bootstrap 95% interval), tokens a task (unknown counts left out and said), routes,
and the rewards of the synthesized units. For a rule checked by rerunning a stream (`stream_rerun.py`).

Usage: python bench/pair_streams.py NEW_RUN OLD_RUN [--arm jit_examples] [--old-arm ARM] [--last K]
(`--old-arm`: the old run's arm where it is another, e.g. two arms of one run: an ablation)
"""

from __future__ import annotations

import argparse
import statistics
from collections import Counter
from pathlib import Path

from jitagent.benchmark.arms import STREAM_ARMS
from jitagent.benchmark.ledger import Ledger, total_tokens
from jitagent.benchmark.stats import paired_difference


def reading(units: list[dict]) -> str:
    tokens = [t for t in map(total_tokens, units) if t is not None]
    unknown = len(units) - len(tokens)
    routes = Counter(u["route"] for u in units)
    synthesized = ", ".join(f"{u['reward']:.2f}" for u in units if u["route"] == "synthesized") or "none"
    return (f"success {statistics.fmean(u['reward'] for u in units):.1%}, "
            f"{statistics.fmean(tokens) if tokens else float('nan'):,.0f} tokens a task"
            f"{f' ({unknown} unknown)' if unknown else ''}, routes {dict(routes)}, "
            f"synthesized: {synthesized}")


def last(units: list[dict], tasks: int | None) -> list[dict]:
    """The units of the stream's last `tasks` tasks (None: all)."""
    if not tasks or not units:
        return units
    end = max(u["order"] for u in units)
    return [u for u in units if u["order"] > end - tasks]


def same_choices(new: list[dict], old: list[dict]) -> int:
    """How many tasks ran the same harness by the same route in both streams."""
    before = {u["task_id"]: (u["harness"], u["route"]) for u in old}
    return sum(before.get(u["task_id"]) == (u["harness"], u["route"]) for u in new)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("new", type=Path)
    parser.add_argument("old", type=Path)
    parser.add_argument("--arm", default="jit_examples", choices=STREAM_ARMS)
    parser.add_argument("--old-arm", choices=STREAM_ARMS, help="the old run's arm (default: --arm)")
    parser.add_argument("--last", type=int, help="only the stream's last K tasks (by order)")
    args = parser.parse_args()
    arms = {"new": args.arm, "old": args.old_arm or args.arm}
    runs = {name: last(Ledger(path / "results.jsonl").rows(arms[name]), args.last) for name, path in
            (("new", args.new), ("old", args.old))}
    for name, units in runs.items():
        if not units:
            raise SystemExit(f"pair_streams: {name} run has no rows of arm {arms[name]!r}")
        print(f"{name}: {reading(units)}")
    mean, low, high, n = paired_difference(runs["new"], runs["old"])
    print(f"new − old: {mean * 100:+.1f} points ({low * 100:+.1f} to {high * 100:+.1f}), {n} tasks paired; "
          f"the same harness and route on {same_choices(runs['new'], runs['old'])}")

if __name__ == "__main__":
    main()
