"""`jitagent synthesize` and `jitagent solve`: the JIT pipeline from the command line."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from jitagent.paths import default_bank_path

console = Console()


def build_pipeline(args, learn: bool):
    from harness_bank import HarnessBank
    from jitagent.catalog import seed_bank
    from jitagent.models import load_model
    from harness_bank.router import RouterConfig
    from jitagent.pipeline import JitPipeline, PipelineConfig
    from jitagent.synthesis.synthesize import SynthesisConfig

    bank = HarnessBank(args.bank)
    seed_bank(bank)
    meta = load_model(args.model, slot="meta")
    solver = load_model(args.solver_model or args.model, slot="solver")
    config = PipelineConfig(router=RouterConfig(references=args.k), learn=learn, synthesis=SynthesisConfig(
        n=args.n, selection=args.selection, dry_run=not args.no_dry_run, reference_mode=args.references))
    return JitPipeline(bank, meta, solver, config)


def task_from_args(args):
    from jitagent.tasks import Task

    return Task(id="cli-" + hashlib.sha256(args.text.encode()).hexdigest()[:8], prompt=args.text, type=args.type)


def print_result(result, show_run: bool) -> None:
    data = result.to_dict()
    console.print(f"[bold]route[/bold]: {data['route']}   [bold]harness[/bold]: {data['harness_name']} ({data['harness_id']})"
                  f"   cluster: {data['cluster']}")
    if data["reason"]:
        console.print(f"selection: {data['reason']}")
    if data["candidates"]:
        table = Table("cand", "valid", "origin", "harness", "repairs", "first error", "last error", "dry run", "score")
        for c in data["candidates"]:
            first, last = c["rounds"][0]["error"], c["rounds"][-1]["error"]
            table.add_row(str(c["index"]), "yes" if c["valid"] else "no", c["origin"], c["harness_id"] or "-",
                          str(len(c["rounds"]) - 1), first[:50] or "-", (last[:50] or "-") if len(c["rounds"]) > 1 else "-",
                          c["dry_run"] or "-", "-" if c["score"] is None else f"{c['score']:.2f}")
        console.print(table)
    cost = data["cost"]
    parts = [f"{k}: {v['tokens'] if v['tokens'] is not None else 'unknown'} tok / {v['wall_s']:.1f}s"
             for k, v in cost.items() if v is not None]
    console.print("cost — " + ", ".join(parts))
    if show_run and data["result"]:
        r = data["result"]
        console.print(f"answer: {r['answer']!r}   verdict: {r['verdict'][:120]}")
    console.print(result.harness.to_yaml() if not show_run else "")


def cmd_synthesize(args) -> int:
    pipeline = build_pipeline(args, learn=False)
    result = asyncio.run(pipeline.solve(task_from_args(args), execute=False))
    print_result(result, show_run=False)
    if args.json:
        Path(args.json).write_text(json.dumps(result.to_dict() | {"spec": result.harness.model_dump(mode="json")}, indent=2, default=str))
    pipeline.bank.close()
    return 0


def cmd_solve(args) -> int:
    pipeline = build_pipeline(args, learn=True)
    result = asyncio.run(pipeline.solve(task_from_args(args)))
    print_result(result, show_run=True)
    if args.json:
        Path(args.json).write_text(json.dumps(result.to_dict(), indent=2, default=str))
    pipeline.bank.close()
    return 0


def add_commands(sub) -> None:
    for name, func, help_text in (("synthesize", cmd_synthesize, "write, repair and select a harness for a task"),
                                  ("solve", cmd_solve, "synthesize a harness and execute it")):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("text", help="the task text")
        p.add_argument("--n", type=int, default=3, help="candidates")
        p.add_argument("-k", type=int, default=3, help="references retrieved")
        p.add_argument("--model", default="embedded", help="meta-model: embedded | model name | URL")
        p.add_argument("--solver-model", help="solver (default: the meta-model)")
        p.add_argument("--type", help="task type (decides the cluster)")
        p.add_argument("--selection", choices=["score", "judge"], default="score")
        p.add_argument("--references", choices=["descriptions", "full"], default="descriptions")
        p.add_argument("--no-dry-run", action="store_true")
        p.add_argument("--bank", default=default_bank_path())
        p.add_argument("--json", metavar="OUT")
        p.set_defaults(func=func)
