"""How often the meta-model's candidates are broken, before and after repair, and how often a
task ends on the fallback — `jitagent synthesize` over a suite split (static: no learning).

Usage: python bench/synthesis_rates.py --suite starter --split score --n 3 [--model embedded]
"""

import argparse
import asyncio
import json
import platform
import statistics
import tempfile
import time
from datetime import date
from pathlib import Path

from rich.progress import track

from harness_bank import HarnessBank
from jitagent.harness.seeds import seed_bank
from jitagent.improvement.synthesis.synthesize import SynthesisConfig
from jitagent.models import load_model
from jitagent.solving.config import PipelineConfig
from jitagent.solving.pipeline import JitPipeline
from jitagent.tasks.task import load_suite

OUT = Path(__file__).parent / "out"


def row_of(task, result) -> dict:
    """One task's synthesis: its candidates, how many were broken before and after repair, its cost."""
    cands = result.synthesis.candidates
    cost = result.synthesis_cost
    return {"task": task.id, "route": result.route, "candidates": len(cands),
            "broken_before": sum(c.broken_before_repair for c in cands),
            "broken_after": sum(c.broken_after_repair for c in cands),
            "synthesis_completion": cost.synthesis.completion_tokens,
            "synthesis_prompt": cost.synthesis.prompt_tokens,
            "repair_tokens": cost.repair.tokens, "dry_run_tokens": cost.dry_run.tokens,
            "synthesis_wall_s": cost.synthesis.wall_s + cost.repair.wall_s,
            "dry_run_wall_s": cost.dry_run.wall_s,
            "first_errors": [c.rounds[0].error for c in cands if c.rounds[0].error],
            "harness": {k: v for k, v in result.harness.content().items()
                        if k in ("action", "planning", "tools")}}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--suite", default="starter")
    parser.add_argument("--split", default="score")
    parser.add_argument("--n", type=int, default=3)
    parser.add_argument("--model", default="embedded")
    args = parser.parse_args()
    tasks = load_suite(args.suite, args.split)
    with tempfile.TemporaryDirectory() as tmp:
        bank = HarnessBank(f"{tmp}/bank.db")
        seed_bank(bank)
        model = load_model(args.model)
        pipeline = JitPipeline(bank, model, model,
                               PipelineConfig(learn=False, synthesis=SynthesisConfig(n=args.n)))
        start = time.monotonic()
        rows = [row_of(task, asyncio.run(pipeline.solve(task, execute=False)))
                for task in track(tasks, description="synthesizing")]
        total = time.monotonic() - start
        bank.close()
    OUT.mkdir(exist_ok=True)
    (OUT / f"synthesis_{args.suite}_{args.split}_{model.name}.json").write_text(json.dumps(rows, indent=2))
    n_cands = sum(r["candidates"] for r in rows)
    per_task = [r["synthesis_completion"] / r["candidates"] * args.n for r in rows]
    print(f"\n{date.today()} on {platform.node()}: {len(rows)} tasks ({args.suite}/{args.split}), "
          f"N={args.n}, "
          f"meta-model {model.name}, {total:.0f}s in all\n")
    print("| candidates | broken before repair | broken after repair | tasks on fallback | median synthesis "
          "tokens per task (completion / prompt) | median repair tokens | median dry-run tokens | median "
          "synthesis+repair wall s |")
    print("|---|---|---|---|---|---|---|---|")
    print(f"| {n_cands} | {sum(r['broken_before'] for r in rows) / n_cands:.1%} | "
          f"{sum(r['broken_after'] for r in rows) / n_cands:.1%} | "
          f"{sum(r['route'] == 'fallback' for r in rows) / len(rows):.1%} | "
          f"{statistics.median(per_task):.0f} / "
          f"{statistics.median(r['synthesis_prompt'] for r in rows):.0f} | "
          f"{statistics.median(r['repair_tokens'] for r in rows):.0f} | "
          f"{statistics.median(r['dry_run_tokens'] for r in rows):.0f} | "
          f"{statistics.median(r['synthesis_wall_s'] for r in rows):.1f} |")
    errors = [e.split("]")[0] + "]" for r in rows for e in r["first_errors"]]
    print("\nfirst-draft errors by rung: " + ", ".join(f"{k} {errors.count(k)}" for k in sorted(set(errors))))


if __name__ == "__main__":
    main()
