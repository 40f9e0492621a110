"""What a stream arm's synthesis cost and what its variants earned, from a run's ledger and trajectories: the
units where a meta-model's variant was written and ran (route `synthesized`) and every unit a meta-model's
variant ran (its name carries the edit's `~digest`, which only the trajectories hold: the ledger names
harnesses by id), each with its mean reward and its paired difference against a baseline arm of the same
run on the same tasks, and per seed the variants descend from, against that seed where it ran as a fixed
arm on the same tasks; and the arm's synthesis and repair tokens as a share of all its tokens (issue 43:
where the variants lose, synthesis may cost at most 5% of the stream's tokens). The same for every unit an
adapter's variant ran (its name carries `@adapter`): what the weights trained on the stream earned.

Usage: python bench/synthesis_cost.py RUN [--arm jit_examples] [--baseline fixed:program_of_thought]
"""

from __future__ import annotations

import argparse
import re
import statistics
from collections import defaultdict
from pathlib import Path

from jitagent.benchmark.arms import STREAM_ARMS
from jitagent.benchmark.ledger import Ledger, read_traces, total_tokens
from jitagent.benchmark.stats import paired_difference

SEED = re.compile(r"[^~+@/]+")  # a variant's name begins with its seed's (`program_of_thought~94f72c+ex2`)
# what marks a harness's name: a meta-model's edit (`~digest`), an adapter's solver (`@adapter`)
MARKS = (("a meta-model's variant", "~"), ("an adapter", "@"))


def versus(units: list[dict], baseline: list[dict], name: str) -> str:
    if not baseline:
        return f"{name} did not run here"
    mean, low, high, n = paired_difference(units, baseline)
    return f"{mean * 100:+.1f} ({low * 100:+.1f}..{high * 100:+.1f}) against {name} on {n}" if n \
        else f"no task paired with {name}"


def summary(chosen: list[dict], ledger: Ledger, baseline: str) -> str:
    if not chosen:
        return ""
    return f": {statistics.fmean(u['reward'] for u in chosen):.1%}, " + versus(chosen, ledger.rows(baseline),
                                                                                baseline)


def account(run: Path, arm: str, baseline: str) -> list[str]:
    ledger = Ledger(run / "results.jsonl")
    units = ledger.rows(arm)
    if not units or "route" not in units[0]:
        raise SystemExit(f"synthesis_cost: the run has no stream rows of arm {arm!r}")
    spent = [u for u in units if total_tokens(u) is not None]
    written = sum((u["synthesis_tokens"] or 0) + (u["repair_tokens"] or 0) for u in spent)
    total = sum(total_tokens(u) for u in spent)
    cut = sum(u["synthesis_tokens"] is None for u in units)  # out of budget while a variant was written
    lines = [f"{arm}: synthesis and repair {written:,} tokens, "
             + (f"{written / total:.1%} of the arm's" if total else "of no known total")
             + f" ({len(units) - len(spent)} units' counts unknown, {cut} of them cut off in synthesis)"]
    # the name of each unit's harness: the ledger holds its id; a unit traced twice (an infrastructure
    # error, then its rerun) by its last trace
    names = {(t["task_id"], t.get("repeat", 0)): t.get("harness") or ""
             for t in read_traces(run) if t.get("arm") == arm}
    if not names:
        raise SystemExit(f"synthesis_cost: {run} has no trajectories of arm {arm!r}")
    synthesized = [u for u in units if u["route"] == "synthesized"]
    lines.append(f"  {len(synthesized)} of {len(units)} units on the route synthesized"
                 + summary(synthesized, ledger, baseline))
    for what, mark in MARKS:
        by_seed = defaultdict(list)
        for u in units:
            if mark in (name := names.get((u["task_id"], u["repeat"]), "")):
                by_seed[SEED.match(name).group()].append(u)
        ran = [u for own in by_seed.values() for u in own]
        lines.append(f"  {len(ran)} of {len(units)} units ran {what} (any route)"
                     + summary(ran, ledger, baseline))
        for seed, own in sorted(by_seed.items()):
            mean = statistics.fmean(u["reward"] for u in own)
            lines.append(f"    {what} of {seed}: {len(own)} units, {mean:.1%}, "
                         + versus(own, ledger.rows(f"fixed:{seed}"), f"the seed itself, fixed:{seed}"))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path)
    parser.add_argument("--arm", default="jit_examples", choices=STREAM_ARMS)
    parser.add_argument("--baseline", default="fixed:program_of_thought", help="an arm of the same run")
    args = parser.parse_args()
    print("\n".join(account(args.run, args.arm, args.baseline)))


if __name__ == "__main__":
    main()
