"""`jitagent synthesize` and `jitagent solve`: the JIT pipeline from the command line."""

from __future__ import annotations

import asyncio
import json
import sys

from rich.text import Text

from jitagent.cli import settings
from jitagent.cli.common import (
    api_key,
    bank,
    bank_location,
    common,
    console,
    models,
    output,
    result_line,
    table,
    task_from_args,
    task_options,
)
from jitagent.cli.options import USAGE, Failure, FieldRange
from jitagent.cli.progress import waiting
from jitagent.cli.terminal import visible
from jitagent.config.paths import shared


def pipeline_for(args, learn: bool):
    from harness_bank.router import RouterConfig
    from jitagent.improvement.synthesis.synthesize import SynthesisConfig
    from jitagent.solving.assembly import build_pipeline
    from jitagent.solving.config import PipelineConfig

    config = PipelineConfig(router=RouterConfig(references=args.k), learn=learn, synthesis=SynthesisConfig(
        n=args.n, selection=args.selection, dry_run=not args.no_dry_run, reference_mode=args.references))
    return build_pipeline(bank_location(args), cache_dir=args.data_dir, meta_model=args.meta_model,
                          solver_model=args.solver_model, api_key=api_key(args), config=config)


def print_result(data: dict, out) -> None:
    """What a solve's routing and synthesis did and spent (`SolveResult.to_dict()`), for a person."""
    out.print(Text.assemble(("route", "bold"), f": {data['route']}   ", ("harness", "bold"),
                            f": {data['harness_name']} ({data['harness_id']})   cluster: {data['cluster']}"),
              soft_wrap=True)
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
    executed = bool(data["verdict"])  # a synthesis alone ran nothing, so nothing verified it
    costs = data["synthesis_cost"] | ({"execution": data["cost"]} if executed else {})
    parts = [f"{k}: {'unknown' if tokens(v) is None else tokens(v)} tok / {v['wall_s']:.1f}s"
             for k, v in costs.items()]
    out.print("cost — " + ", ".join(parts), soft_wrap=True)  # the answer: the result line (`result_line`)


def tokens(cost: dict) -> int | None:
    known = cost["prompt_tokens"] is not None and cost["completion_tokens"] is not None
    return cost["prompt_tokens"] + cost["completion_tokens"] if known else None


async def shown(events):
    """The events as they happen, each on stderr as `client solve` shows it; the result."""
    from jitagent.cli.progress import heartbeat
    from jitagent.cli.serve import event_line
    from jitagent.protocol.results import event_to_proto
    from jitagent.solving.events import SolveResult

    result = None
    async for event in heartbeat(events):
        if isinstance(event, SolveResult):
            result = event
        else:
            print(visible(event_line(event_to_proto(event, ""))), file=sys.stderr, flush=True)
    return result


def solved_by_pipeline(args, task, *, execute: bool):
    """The task through the solving layer every door uses, on a pipeline of this process."""
    from jitagent.solving.layer import SolveError, Solving

    with waiting("loading the models and the bank"):
        pipeline = pipeline_for(args, learn=execute)
    try:
        # this machine's user runs its own task as itself: no client's code to confine from it
        solving = Solving(pipeline, allow_unconfined=True)
        return asyncio.run(shown(solving.events(task, execute=execute, door="cli")))
    except SolveError as exc:
        raise Failure(str(exc), USAGE if exc.kind == "bad_request" else 1) from None  # main names the command
    finally:
        pipeline.bank.close()


def cmd_synthesize(args) -> int:
    """The spec goes to stdout as plain YAML (a pipe gets a file `jitagent validate` accepts), or to
    --out FILE; --json prints the whole result instead; the events and the report go to stderr."""
    result = solved_by_pipeline(args, task_from_args(args), execute=False)
    print_result(result.to_dict(), console(stderr=True))
    spec = result.harness.model_dump(mode="json")
    if args.out:
        args.out.write_text(json.dumps(spec, indent=2) if args.out.suffix == ".json"
                            else result.harness.to_yaml())
        shared(args.out)
    if args.json:
        print(json.dumps(result.to_dict() | {"spec": spec}, indent=2, default=str))
    elif not args.out:
        text = result.harness.to_yaml()
        print(visible(text) if sys.stdout.isatty() else text, end="")  # piped: the file, byte for byte
    return 0


def cmd_solve(args) -> int:
    """Route the task (synthesizing where the router explores) and run it, or, with --harness, run that
    harness as it is: no routing, no bank. The events go to stderr as they happen, the result to stdout.
    With --check the exit status is 1 where the task's verifier failed the answer."""
    task = task_from_args(args)
    if args.check and task.verifier.kind == "none":
        raise Failure("--check needs --expect or --verifier: without one nothing checks the answer", USAGE)
    result = run_given(args, task) if args.harness else solved_by_pipeline(args, task, execute=True).to_dict()
    text = json.dumps(result, indent=2, default=str)
    if args.out:
        args.out.write_text(text)
        shared(args.out)
    if args.json:
        print(text)
    elif args.harness:
        print(visible(result_line(result["result"] | {"harness_name": result["harness_name"]})))
    else:  # what the synthesis did and spent on stderr, the one result line on stdout
        print_result(result, console(stderr=True))
        print(visible(result_line(result)))
    passed = (result["result"] if args.harness else result)["passed"]
    return 1 if args.check and not passed else 0


def run_given(args, task) -> dict:
    """The harness named (a seed) or written (a spec file, e.g. from `synthesize`) on the task."""
    from jitagent.cli.progress import heartbeat
    from jitagent.cli.serve import event_line
    from jitagent.harness.seeds import resolve_harness
    from jitagent.models import load_model
    from jitagent.protocol.results import event_to_proto
    from jitagent.runtime.agent import Runtime
    from jitagent.runtime.events import RunResult

    spec = resolve_harness(args.harness)
    with waiting("loading the solver model"):
        solver = load_model(args.solver_model or args.meta_model, slot="solver", api_key=api_key(args))

    async def go() -> RunResult:
        async for event in heartbeat(Runtime(solver).stream(spec, task)):
            if isinstance(event, RunResult):
                return event
            print(visible(event_line(event_to_proto(event, ""))), file=sys.stderr, flush=True)
    run = asyncio.run(go())
    return {"harness_id": spec.id, "harness_name": spec.name, "result": run.summary()}


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
        settings.add_arguments(p, settings.SYNTHESIZING)
        p.add_argument("-k", type=FieldRange("harness_bank.router:RouterConfig", "references"), default=3,
                       help="references offered as arms")
        p.add_argument("--selection", choices=["score", "judge"], default="score",
                       help="how a synthesis picks among valid candidates: a cheap score (the parent's "
                       "reward, the dry run) or the meta-model as judge")
        p.add_argument("--references", choices=["descriptions", "full"], default="descriptions",
                       help="what the meta-model sees of the reference harnesses: their descriptions, or "
                       "their whole specs")
        if name == "solve":
            p.add_argument("--harness", metavar="FILE|NAME",
                           help="run this harness as it is (a seed's name or a spec file, e.g. from "
                           "`synthesize`): no routing, no synthesis, nothing recorded")
        p.set_defaults(func=func)
