"""Rerun one stream arm of a finished benchmark run from the same warm banks, at the code checked out now.

This copies a run's warm banks (and a tool arm's record of the code already written for its clusters), its
ledger and its trajectories minus the arm's rows into a new run folder. The same `jitagent bench` command
with `--out NEW` then resumes there and runs only the stream, so two versions of the stream meet the same
evidence and pair task by task. That holds where the code that warms and screens is unchanged and the source
run had no infrastructure errors: the bench fills a warm-up's gaps and reruns such units with the code now.

Usage: python bench/stream_rerun.py SRC NEW [--arm jit_examples]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path

from harness_bank.bank import copy_bank
from jitagent.benchmark.arms import STREAM_ARMS, WARMED_ARMS

# a stream's own bank (one per repeat, or `bench --stream`'s one): rebuilt by the stream, never carried
STREAM_BANK = re.compile(r".+-(r\d+|stream)\.db")


def without_arm(path: Path, arm: str) -> tuple[list[str], int]:
    """A JSONL file's lines but the arm's rows, and how many rows were left out."""
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    kept = [line for line in lines if json.loads(line).get("arm") != arm]
    return kept, len(lines) - len(kept)


def write_lines(path: Path, lines: list[str]) -> None:
    path.write_text("".join(f"{line}\n" for line in lines))


def carried_banks(source: Path) -> list[Path]:
    """The banks a stream starts from: every bank of the run but the streams' own."""
    return sorted(p for p in source.glob("*.db") if not STREAM_BANK.fullmatch(p.name))


def rerun_folder(source: Path, new: Path, arm: str) -> dict:
    """Fill `new` from `source` for a rerun of `arm`; what was carried. Raises ValueError naming the
    problem."""
    if new.exists() and (not new.is_dir() or any(new.iterdir())):
        raise ValueError(f"{new} exists and is not an empty folder")
    if not (source / "results.jsonl").is_file():
        raise ValueError(f"{source} has no ledger (results.jsonl)")
    banks = carried_banks(source)
    if arm in WARMED_ARMS and not banks:
        raise ValueError(f"{source} has no warm bank for {arm} to start from")
    rows, dropped = without_arm(source / "results.jsonl", arm)
    if not dropped:
        raise ValueError(f"{source} has no rows of arm {arm!r}")
    new.mkdir(parents=True, exist_ok=True)
    write_lines(new / "results.jsonl", rows)
    for bank in banks:
        copy_bank(bank, new / bank.name)
    steps = sorted(source.glob("tools-*.jsonl"))  # code already written for the clusters: not written again
    for path in steps:
        shutil.copy2(path, new / path.name)
    if (source / "trajectories.jsonl").is_file():
        write_lines(new / "trajectories.jsonl", without_arm(source / "trajectories.jsonl", arm)[0])
    return {"banks": [b.name for b in banks], "tool_steps": [p.name for p in steps], "dropped_rows": dropped}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--arm", default="jit_examples", choices=STREAM_ARMS)
    args = parser.parse_args()
    try:
        print(json.dumps(rerun_folder(args.source, args.new, args.arm)))
    except ValueError as exc:
        sys.exit(f"stream_rerun: {exc}")


if __name__ == "__main__":
    main()
