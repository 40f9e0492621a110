"""`jitagent synthesize` and `jitagent solve`: the JIT pipeline from the command line."""

from __future__ import annotations

import asyncio
import json

from rich.console import Console

from jitagent.cli_common import (
    api_key,
    bank,
    bank_location,
    common,
    models,
    output,
    table,
    task_from_args,
    task_options,
)

console = Console()
report = Console(stderr=True)  # what a person reads; stdout stays for what is piped


def pipeline_for(args, learn: bool):
    from harness_bank.router import RouterConfig
    from jitagent.assembly import build_pipeline
    from jitagent.pipeline import PipelineConfig
    from jitagent.synthesis.synthesize import SynthesisConfig

    config = PipelineConfig(router=RouterConfig(references=args.k), learn=learn, synthesis=SynthesisConfig(
        n=args.n, selection=args.selection, dry_run=not args.no_dry_run, reference_mode=args.references))
    return build_pipeline(bank_location(args), cache_dir=args.data_dir, meta_model=args.meta_model,
                          solver_model=args.solver_model, api_key=api_key(args), config=config)


def print_result(result, out: Console) -> None:
    data = result.to_dict()
    out.print(f"[bold]route[/bold]: {data['route']}   [bold]harness[/bold]: {data['harness_name']} "
              f"({data['harness_id']})   cluster: {data['cluster']}", soft_wrap=True)
    if data["reason"]:
        out.print(f"selection: {data['reason']}", soft_wrap=True)
    if data["candidates"]:
        rows = table("cand", "valid", "origin", "harness", "repairs", "first error", "last error", "dry run",
                     "score")
        for c in data["candidates"]:
            first, last = c["rounds"][0]["error"], c["rounds"][-1]["error"]
            rows.add_row(str(c["index"]), "yes" if c["valid"] else "no", c["origin"], c["harness_id"] or "-",
                         str(len(c["rounds"]) - 1), first[:50] or "-",
                         (last[:50] or "-") if len(c["rounds"]) > 1 else "-", c["dry_run"] or "-",
                         "-" if c["score"] is None else f"{c['score']:.2f}")
        out.print(rows)
    parts = [f"{k}: {v['tokens'] if v['tokens'] is not None else 'unknown'} tok / {v['wall_s']:.1f}s"
             for k, v in data["cost"].items() if v is not None]
    out.print("cost — " + ", ".join(parts), soft_wrap=True)
    if data["result"]:
        r = data["result"]
        reward = "unverified" if r["reward"] is None else f"{r['reward']:g}"
        out.print(f"answer: {r['answer']!r}   reward: {reward}   verdict: {r['verdict'][:120]}",
                  soft_wrap=True)


def cmd_synthesize(args) -> int:
    """The spec goes to stdout as plain YAML (a pipe gets a file `jitagent validate` accepts), or to
    --out FILE; --json prints the whole result instead; the report goes to stderr."""
    pipeline = pipeline_for(args, learn=False)
    try:
        result = asyncio.run(pipeline.solve(task_from_args(args), execute=False))
    finally:
        pipeline.bank.close()
    print_result(result, report)
    spec = result.harness.model_dump(mode="json")
    if args.out:
        args.out.write_text(json.dumps(spec, indent=2) if args.out.suffix == ".json"
                            else result.harness.to_yaml())
    if args.json:
        print(json.dumps(result.to_dict() | {"spec": spec}, indent=2, default=str))
    elif not args.out:
        print(result.harness.to_yaml(), end="")
    return 0


def cmd_solve(args) -> int:
    pipeline = pipeline_for(args, learn=True)
    try:
        result = asyncio.run(pipeline.solve(task_from_args(args)))
    finally:
        pipeline.bank.close()
    text = json.dumps(result.to_dict(), indent=2, default=str)
    if args.out:
        args.out.write_text(text)
    if args.json:
        print(text)
    else:
        print_result(result, console)
    return 0


def add_commands(sub) -> None:
    for name, func, help_text, out_help in (
        ("synthesize", cmd_synthesize, "write, repair and select a harness for a task (stdout: its spec)",
         "write the spec here (.json: as JSON, else YAML)"),
        ("solve", cmd_solve, "route a task to a harness (synthesizing if need be) and run it",
         "write the result as JSON here"),
    ):
        p = sub.add_parser(name, help=help_text, parents=[
            common(), task_options(checks=name == "solve"), output(out_help), models(old_model="meta_model"),
            bank()])
        p.add_argument("--n", type=int, default=3, help="candidates")
        p.add_argument("-k", type=int, default=3, help="references offered as arms")
        p.add_argument("--selection", choices=["score", "judge"], default="score")
        p.add_argument("--references", choices=["descriptions", "full"], default="descriptions")
        p.add_argument("--no-dry-run", action="store_true")
        p.set_defaults(func=func)
