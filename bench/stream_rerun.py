"""Rerun one stream arm of a finished benchmark run, from the same warm banks, at the code checked out now.

A run's warm-up (its banks on `learn`), screen and fixed arms do not depend on the stream's code: this copies
them, with the ledger and trajectories minus the arm's rows, into a new run folder. The same `jitagent bench`
command with `--out NEW` then resumes there and runs only the stream, so two versions of the stream meet the
same evidence and can be paired task by task.

Usage: python bench/stream_rerun.py SRC NEW [--arm jit_examples]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path


def drop_arm(source: Path, target: Path, arm: str) -> int:
    """Copy a JSONL file without the arm's rows; how many rows were dropped."""
    kept, dropped = [], 0
    for line in source.read_text().splitlines():
        if line.strip() and json.loads(line).get("arm") == arm:
            dropped += 1
        else:
            kept.append(line)
    target.write_text("".join(f"{line}\n" for line in kept))
    return dropped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--arm", default="jit_examples")
    args = parser.parse_args()
    if args.new.exists() and any(args.new.iterdir()):
        sys.exit(f"stream_rerun: {args.new} is not empty")
    banks = [p for p in args.source.glob("*.db*") if not p.name.startswith(f"{args.arm}-r")]
    if not (args.source / "results.jsonl").exists() or not banks:
        sys.exit(f"stream_rerun: {args.source} has no ledger or no warm banks to start from")
    args.new.mkdir(parents=True, exist_ok=True)
    for bank in banks:
        shutil.copy2(bank, args.new / bank.name)
    dropped = drop_arm(args.source / "results.jsonl", args.new / "results.jsonl", args.arm)
    if (args.source / "trajectories.jsonl").exists():
        drop_arm(args.source / "trajectories.jsonl", args.new / "trajectories.jsonl", args.arm)
    print(json.dumps({"banks": sorted(b.name for b in banks), "dropped_rows": dropped}))


if __name__ == "__main__":
    main()
