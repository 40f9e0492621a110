"""`jitagent bank ...`: create, inspect and administer a harness bank."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime

from rich.console import Console

from jitagent.cli_common import api_key, bank_location, common, models, output, table, top_k
from jitagent.cli_common import bank as bank_options
from jitagent.paths import open_bank

console = Console()
WRITERS = ("init", "warm")  # the commands that may create a bank; the others need one that exists


def _open(args):
    """DataDirError (a ValueError): one line, exit status 2."""
    return open_bank(bank_location(args), cache_dir=args.data_dir, create=args.bank_command in WRITERS)


def _out(args, value, render) -> int:
    """`value` as JSON with --json, else `render()` for a person."""
    if args.json:
        print(json.dumps(value, indent=2, default=str))
    else:
        render()
    return 0


def _when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S")


def cmd_init(args) -> int:
    from jitagent.catalog import seed_bank

    bank = _open(args)
    ids = seed_bank(bank)
    bank.close()
    path = str(bank_location(args))
    return _out(args, {"path": path, "seeds": len(ids)},
                lambda: console.print(f"bank at {path} holds {len(ids)} seeds"))


def cmd_ls(args) -> int:
    harnesses = _open(args).list_harnesses(origin=args.origin)
    rows = [{"id": h.id, "name": h.name, "origin": h.origin, "parent_id": h.parent_id,
             "generator": h.generator, "created_at": h.created_at} for h in harnesses]

    def render():
        shown = table("id", "name", "origin", "parent", "generator", "created")
        for h in harnesses:
            shown.add_row(h.id, h.name, h.origin, h.parent_id or "-", h.generator, _when(h.created_at))
        console.print(shown)
    return _out(args, rows, render)


def cmd_show(args) -> int:
    harness = asdict(_open(args).get(args.id))
    return _out(args, harness, lambda: console.print_json(json.dumps(harness, default=str)))


def cmd_lineage(args) -> int:
    chain = _open(args).lineage(args.id)
    rows = [{"id": h.id, "name": h.name, "origin": h.origin, "generator": h.generator,
             "parent_id": h.parent_id}
            for h in chain]
    return _out(args, rows, lambda: console.print("\n".join(
        f"{'  ' * i}└ {h.id} {h.name} ({h.origin}, {h.generator})" for i, h in enumerate(chain))))


def cmd_search(args) -> int:
    hits = _open(args).search(args.text, args.k)

    def render():
        shown = table("rank", "harness", "id", "score", "similarity", "prior reward", "runs")
        for i, h in enumerate(hits, 1):
            shown.add_row(str(i), h.name, h.harness_id, f"{h.score:.3f}", f"{h.similarity:.3f}",
                          "-" if h.prior_reward is None else f"{h.prior_reward:.2f}", str(h.prior_runs))
        console.print(shown)
    return _out(args, [asdict(h) for h in hits], render)


def cmd_incumbents(args) -> int:
    incumbents = _open(args).incumbents()

    def render():
        shown = table("cluster", "harness", "runs", "mean reward", "mean tokens", "since")
        for r in incumbents:
            shown.add_row(r.cluster, r.harness_id, str(r.runs), f"{r.mean_reward:.2f}",
                          "unknown" if r.mean_tokens is None else f"{r.mean_tokens:.0f}", _when(r.since))
        console.print(shown)
    return _out(args, [asdict(r) for r in incumbents], render)


def cmd_rollback(args) -> int:
    done = _open(args).rollback(args.cluster)
    return _out(args, asdict(done),
                lambda: console.print(f"{done.cluster}: restored {done.restored} (replaced {done.replaced})"))


def cmd_reindex(args) -> int:
    bank = _open(args)
    n = bank.reindex()
    return _out(args, {"vectors": n, "repaired_on_open": bank.repaired_on_open},
                lambda: console.print(f"index rebuilt from the database: {n} vectors"))


def cmd_warm(args) -> int:
    """Seeds on a suite's split, outcomes into the bank; with top:K a first pass of every seed on one
    task per type picks the K best, which then run on the rest. Resumable."""
    import asyncio

    from rich.progress import Progress

    from jitagent.catalog import load_seeds, seed_bank
    from jitagent.models import load_model
    from jitagent.runtime.agent import Runtime
    from jitagent.tasks import load_suite, spread_over_types
    from jitagent.warm import rank_seeds, warm_bank

    bank = _open(args)
    seed_bank(bank)
    tasks = spread_over_types(load_suite(args.suite, args.split), args.limit)
    runtime = Runtime(load_model(args.solver_model, slot="solver", api_key=api_key(args)))
    seeds = load_seeds()
    first_pass = spread_over_types(tasks, len({t.type for t in tasks}))

    async def go(specs, batch, bar, label):
        job = bar.add_task(label, total=len(specs) * len(batch))
        async for unit in warm_bank(bank, runtime, specs, batch, budget_s=args.budget_s):
            bar.advance(job)
            bar.console.log(f"{unit.name} {unit.task.id}: reward {unit.run.reward:.2f}"
                            + ("" if unit.recorded else f" (not recorded: {unit.run.error})"))

    async def main():
        with Progress(transient=True, console=Console(stderr=True)) as bar:  # stdout stays for --json
            chosen = seeds
            if args.seeds is not None:
                await go(seeds, first_pass, bar, "first pass")
                chosen = {n: seeds[n]
                          for n in rank_seeds(bank, seeds, [t.id for t in first_pass])[:args.seeds]}
            await go(chosen, tasks, bar, "warm")
        return chosen
    chosen = asyncio.run(main())
    summary = {"path": str(bank_location(args)), "suite": args.suite, "split": args.split,
               "tasks": len(tasks), "seeds": list(chosen), "stats": bank.stats()}
    bank.close()
    stats = summary["stats"]
    return _out(args, summary, lambda: console.print(
        f"warmed {summary['path']} with {', '.join(chosen)} on {len(tasks)} {args.split} tasks: "
        f"{stats['outcomes']} outcomes in {stats['clusters']} clusters"))


def cmd_stats(args) -> int:
    stats = _open(args).stats()
    return _out(args, stats, lambda: console.print("\n".join(f"{k}: {x}" for k, x in stats.items())))


def add_commands(sub) -> None:
    shared = [common(), bank_options(old_path=True), output()]
    group = sub.add_parser("bank", help="the harness bank", parents=shared)
    cmds = group.add_subparsers(dest="bank_command", required=True, metavar="COMMAND")

    def add(name, func, help_text, *parents):
        p = cmds.add_parser(name, help=help_text, parents=[*shared, *parents])
        p.set_defaults(func=func)
        return p

    add("init", cmd_init, "create a bank holding the 13 seeds")
    origins = ["seed", "synthesized", "repaired", "evolved"]
    add("ls", cmd_ls, "list harnesses").add_argument("--origin", choices=origins)
    add("show", cmd_show, "show one harness").add_argument("id")
    add("lineage", cmd_lineage, "a harness and its ancestors").add_argument("id")
    p = add("search", cmd_search, "top-k harnesses for a task text")
    p.add_argument("text")
    p.add_argument("-k", type=int, default=3)
    add("incumbents", cmd_incumbents, "the incumbent harness per cluster")
    add("rollback", cmd_rollback, "restore a cluster's previous incumbent").add_argument("cluster")
    add("reindex", cmd_reindex, "rebuild the faiss index from the database")
    add("stats", cmd_stats, "counts, index size, database size")
    p = add("warm", cmd_warm, "record the seeds' outcomes on a suite's learn split (resumable)",
            models(meta=False))
    p.add_argument("--suite", required=True)
    p.add_argument("--split", default="learn", choices=["learn"],
                   help="learn only: score gates evolve, final is held out")
    p.add_argument("--seeds", default=None, type=top_k,
                   help="all | top:K by a first pass (one task per type)")
    p.add_argument("--limit", type=int, help="N tasks, spread over task types")
    p.add_argument("--budget-s", type=float, default=60.0,
                   help="wall-clock budget per run (running out scores 0)")
