"""`jitagent bank ...`: create, inspect and administer a harness bank."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from rich.text import Text

from jitagent.cli.common import (
    api_key,
    bank_location,
    budget,
    common,
    console,
    learned_from,
    models,
    output,
    solver_model,
    table,
)
from jitagent.cli.common import bank as bank_options
from jitagent.cli.options import COUNT, top_k
from jitagent.cli.progress import units, waiting
from jitagent.config.paths import open_bank, shared

WRITERS = ("init", "warm")  # the commands that may create a bank; the others need one that exists


def _open(args, models: list[str] = ()):
    """DataDirError (a ValueError): one line, exit status 2. `models`: those that will write to it."""
    return open_bank(bank_location(args), cache_dir=args.data_dir, create=args.bank_command in WRITERS,
                     models=models)


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
    from jitagent.harness.seeds import seed_bank

    with waiting("loading the embedder and storing the seeds"):
        bank = _open(args)
        ids = seed_bank(bank)
    bank.close()
    path = str(bank_location(args))
    return _out(args, {"path": path, "seeds": len(ids)},
                lambda: console().print(f"bank at {path} holds {len(ids)} seeds", soft_wrap=True))


def cmd_ls(args) -> int:
    harnesses = _open(args).list_harnesses(origin=args.origin)
    rows = [{"id": h.id, "name": h.name, "origin": h.origin, "parent_id": h.parent_id,
             "generator": h.generator, "created_at": h.created_at} for h in harnesses]

    def render():
        shown = table("id", "name", "origin", "parent", "generator", "created")
        for h in harnesses:
            shown.add_row(h.id, h.name, h.origin, h.parent_id or "-", h.generator, _when(h.created_at))
        console().print(shown)
    return _out(args, rows, render)


def cmd_show(args) -> int:
    """A harness by name or id: its spec, its code sections, its lineage and its evidence per cluster; or an
    adapter by name or id: its lineage, data, cost, gate and the evidence of the harnesses that run with
    it."""
    import yaml

    from harness_bank.records import BankError
    from harness_bank.views import BankViews

    views = BankViews(_open(args))
    try:
        view = views.harness(args.name_or_id)
    except BankError:  # not a harness: an adapter, or the harness's error
        if (adapter := views.adapter(args.name_or_id)) is None:
            raise
        return _show_adapter(args, adapter)
    h = view.harness
    data = asdict(h) | {"lineage": [{"id": a.id, "name": a.name, "origin": a.origin} for a in view.lineage],
                        "evidence": view.evidence, "acceptance": view.acceptance}
    code = h.spec.get("code")
    sections = [code] if isinstance(code, dict) else code or []

    def render():
        out = console()
        out.print(Text.assemble((h.name, "bold"), f" {h.id} ({h.origin}, by {h.generator}, "
                                                  f"{_when(h.created_at)})"), soft_wrap=True)
        out.print(h.description, soft_wrap=True)
        out.print(yaml.safe_dump({k: v for k, v in h.spec.items() if k not in ("code", "envelope")},
                                 sort_keys=False, allow_unicode=True), soft_wrap=True, markup=False)
        for section in sections:
            out.print(Text(f"code, stage {section['stage']}", style="bold"), soft_wrap=True)
            out.print(section["source"], soft_wrap=True, markup=False)
        out.print("lineage: " + " <- ".join(f"{a.name} ({a.id})" for a in view.lineage), soft_wrap=True)
        shown = table("cluster", "runs", "mean reward", "mean tokens", "incumbent")
        for e in view.evidence:
            shown.add_row(e["cluster"], str(e["runs"]), f"{e['mean_reward']:.2f}", _tokens(e["mean_tokens"]),
                          "yes" if e["incumbent"] else "-")
        out.print(shown if view.evidence else "evidence: no outcomes yet")
        for a in view.acceptance:  # code written for a cluster: why it was let in
            out.print(f"accepted for {a['cluster']} ({a['stage']} stage): {a['reason']}; held-out rewards "
                      f"{a['heldout']} vs its parent's {a['parent_heldout']}", soft_wrap=True)
    return _out(args, data, render)


def _adapter_row(a) -> dict:
    return {"id": a.id, "name": a.name, "base_model": a.base_model, "parent_id": a.parent_id,
            "examples": a.stats.get("examples"), "corrected": a.stats.get("corrected_records"),
            "train_s": a.stats.get("train_s"),
            "gate": a.gate and {k: v for k, v in a.gate.items() if k != "units"},
            "served_as": a.served_name, "created_at": a.created_at}


def cmd_adapters(args) -> int:
    """The solver's adapters the bank trained, newest first; with --files DIR, one adapter's files written
    there: ID.gguf (llama.cpp: `--lora`, `Llama(lora_path=...)`) and ID-peft/ (vLLM: `--lora-modules`)."""
    bank = _open(args)
    if args.files:
        return _write_adapter_files(args, bank)
    adapters = bank.list_adapters()

    def render():
        shown = table("id", "name", "base model", "examples", "corrected", "train s", "gate", "created")
        for a in adapters:
            gate = "-" if a.gate is None else ("passed" if a.usable else "refused")
            shown.add_row(a.id, a.name, a.base_model, str(a.stats.get("examples")),
                          str(a.stats.get("corrected_records")), f"{a.stats.get('train_s', 0):.0f}", gate,
                          _when(a.created_at))
        console().print(shown if adapters else "no adapters yet: `jitagent train` makes one")
    return _out(args, [_adapter_row(a) for a in adapters], render)


def _write_adapter_files(args, bank) -> int:
    import io
    import zipfile

    from jitagent.cli.options import Failure

    adapter = bank.adapter(args.adapter or "")
    if adapter is None:
        raise Failure(f"--files needs an adapter id or name (see `bank adapters`), got {args.adapter!r}", 2)
    args.files.mkdir(parents=True, exist_ok=True)
    gguf, peft = args.files / f"{adapter.id}.gguf", args.files / f"{adapter.id}-peft"
    gguf.write_bytes(bank.adapter_file(adapter.id))
    zipfile.ZipFile(io.BytesIO(bank.adapter_file(adapter.id, "peft"))).extractall(peft)
    return _out(args, {"gguf": str(gguf), "peft": str(peft), "served_as": adapter.served_name},
                lambda: print(f"{gguf}\n{peft}/  (vllm serve ... --enable-lora --lora-modules "
                              f"{adapter.served_name}={peft})"))


def _show_adapter(args, view) -> int:
    a = view.adapter
    data = _adapter_row(a) | {"sha256": a.sha256, "base_digest": a.base_digest, "data_digest": a.data_digest,
                              "config": a.config, "stats": a.stats, "gate": a.gate,
                              "lineage": [x.id for x in view.lineage], "evidence": view.evidence}

    def render():
        out = console()
        out.print(Text.assemble((a.name, "bold"), f" adapter {a.id} of {a.base_model} "
                                                  f"({_when(a.created_at)}); an HTTP back-end serves it as "
                                                  f"{a.served_name}"), soft_wrap=True)
        out.print(f"data {a.data_digest[:16]}, base {a.base_digest[:16]}, config "
                  + ", ".join(f"{k} {v}" for k, v in a.config.items()), soft_wrap=True)
        out.print("trained: " + ", ".join(f"{k} {v}" for k, v in a.stats.items()), soft_wrap=True)
        out.print("gate: " + ("none" if a.gate is None else ", ".join(
            f"{k} {v}" for k, v in a.gate.items() if k != "units")), soft_wrap=True)
        out.print("lineage: " + " <- ".join(x.id for x in view.lineage), soft_wrap=True)
        shown = table("harness", "cluster", "runs", "mean reward", "mean tokens")
        for e in view.evidence:
            shown.add_row(e["name"], e["cluster"], str(e["runs"]), f"{e['mean_reward']:.2f}",
                          _tokens(e["mean_tokens"]))
        out.print(shown if view.evidence else "evidence: no harness has run with it yet")
    return _out(args, data, render)


def _tokens(mean: float | None) -> str:
    return "unknown" if mean is None else f"{mean:.0f}"


def cmd_clusters(args) -> int:
    """Each cluster: its size, its best arm by posterior mean with the 95% interval, its incumbent."""
    from harness_bank.views import BankViews

    views = BankViews(_open(args)).clusters()

    def render():
        shown = table("cluster", "outcomes", "tasks", "best arm", "posterior mean", "95% interval",
                      "runs", "incumbent")
        for v in views:
            b = v.best
            shown.add_row(v.cluster, str(v.outcomes), str(v.tasks), b.name, f"{b.posterior_mean:.2f}",
                          f"{b.low:.2f}-{b.high:.2f}", str(b.runs), v.incumbent_id or "-")
        console().print(shown if views else "no clusters yet: nothing has run on this bank")
    return _out(args, [asdict(v) for v in views], render)


def cmd_arms(args) -> int:
    """A cluster's arms: each one's posterior, runs, mean reward and tokens, and the routes it ran by."""
    from harness_bank.views import BankViews

    views = BankViews(_open(args))
    arms = views.arms(args.cluster)
    if args.plot:
        with waiting(f"plotting {args.cluster}'s posteriors to {args.plot}"):
            plot_history(views.history(args.cluster), args.cluster, args.plot)

    def render():
        shown = table("harness", "id", "posterior mean", "95% interval", "runs", "mean reward", "mean tokens",
                      "routes", title=args.cluster)
        for a in arms:
            shown.add_row(a.name + (" (retired)" if a.retired else ""), a.harness_id,
                          f"{a.posterior_mean:.2f}",
                          f"{a.low:.2f}-{a.high:.2f}", str(a.runs),
                          "-" if a.mean_reward is None else f"{a.mean_reward:.2f}", _tokens(a.mean_tokens),
                          ", ".join(f"{k} {n}" for k, n in sorted(a.routes.items())) or "-")
        console().print(shown)
    return _out(args, [asdict(a) for a in arms], render)


def plot_history(series: dict[str, list[tuple[int, float, float, float]]], cluster: str, path: Path) -> None:
    """Each arm's posterior mean after each of the cluster's outcomes, with its 95% interval shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name, points in series.items():
        numbers, means, lows, highs = zip(*points)
        line, = ax.plot(numbers, means, label=name)
        ax.fill_between(numbers, lows, highs, alpha=0.15, color=line.get_color())
    ax.set(xlabel=f"outcomes in {cluster}", ylabel="posterior mean reward", ylim=(0, 1),
           title=f"{cluster}: the arms' posteriors as outcomes arrived")
    ax.legend(fontsize="small", loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    shared(path)
    plt.close(fig)


def cmd_lineage(args) -> int:
    from harness_bank.views import BankViews

    bank = _open(args)
    chain = bank.lineage(BankViews(bank).find(args.name_or_id).id)
    rows = [{"id": h.id, "name": h.name, "origin": h.origin, "generator": h.generator,
             "parent_id": h.parent_id}
            for h in chain]
    return _out(args, rows, lambda: console().print("\n".join(
        f"{'  ' * i}└ {h.id} {h.name} ({h.origin}, {h.generator})" for i, h in enumerate(chain)),
        soft_wrap=True))


def cmd_search(args) -> int:
    bank = _open(args)
    with waiting("loading the embedder"):
        hits = bank.search(args.text, args.k)

    def render():
        shown = table("rank", "harness", "id", "score", "similarity", "prior reward", "runs")
        for i, h in enumerate(hits, 1):
            shown.add_row(str(i), h.name, h.harness_id, f"{h.score:.3f}", f"{h.similarity:.3f}",
                          "-" if h.prior_reward is None else f"{h.prior_reward:.2f}", str(h.prior_runs))
        console().print(shown)
    return _out(args, [asdict(h) for h in hits], render)


def cmd_incumbents(args) -> int:
    incumbents = _open(args).incumbents()

    def render():
        shown = table("cluster", "harness", "runs", "mean reward", "mean tokens", "since")
        for r in incumbents:
            shown.add_row(r.cluster, r.harness_id, str(r.runs), f"{r.mean_reward:.2f}",
                          _tokens(r.mean_tokens), _when(r.since))
        console().print(shown)
    return _out(args, [asdict(r) for r in incumbents], render)


def cmd_rollback(args) -> int:
    done = _open(args).rollback(args.cluster)
    return _out(args, asdict(done),
                lambda: console().print(f"{done.cluster}: restored {done.restored} "
                                        f"(replaced {done.replaced})", soft_wrap=True))


def cmd_reindex(args) -> int:
    bank = _open(args)
    n = bank.reindex()
    return _out(args, {"vectors": n, "repaired_on_open": bank.repaired_on_open},
                lambda: console().print(f"index rebuilt from the database: {n} vectors"))


def cmd_warm(args) -> int:
    """Seeds on a suite's split, outcomes into the bank; with top:K a first pass of every seed on one
    task per type picks the K best, which then run on the rest, and after them (unless --no-examples) each
    one's variant with examples. Resumable; --redo runs units again."""
    import asyncio

    from jitagent.harness.seeds import seed_bank, seeds_for
    from jitagent.models import load_model
    from jitagent.offline.warm import rank_seeds, warm_bank, with_examples_variants
    from jitagent.runtime.agent import Runtime
    from jitagent.tasks.task import load_suite, spread_over_types

    tasks = spread_over_types(load_suite(args.suite, args.split), args.limit)
    with waiting("loading the solver model and the embedder"):
        solver = load_model(solver_model(args), slot="solver", api_key=api_key(args))
        bank = _open(args, [solver.name])
        seed_bank(bank)
    runtime = Runtime(solver)
    seeds = seeds_for(tasks)
    first_pass = spread_over_types(tasks, len({t.type for t in tasks}))
    skipped = []

    async def go(specs, batch, label):
        with units(label, len(specs) * len(batch)) as progress:
            async for unit in warm_bank(bank, runtime, specs, batch, budget_s=args.budget_s, redo=args.redo):
                if not unit.recorded:
                    skipped.append(unit)
                progress.done(f"{unit.name} {unit.task.id}: " + (
                    f"reward {unit.run.reward:.2f}" if unit.recorded
                    else f"not recorded: {unit.why_not_recorded}"))

    async def main():
        chosen = seeds
        if args.seeds is not None:
            await go(seeds, first_pass, "first pass")
            chosen = {n: seeds[n] for n in rank_seeds(bank, seeds, [t.id for t in first_pass])[:args.seeds]}
        if not args.no_examples:
            chosen = with_examples_variants(chosen)
        await go(chosen, tasks, "warm")
        return chosen
    chosen = asyncio.run(main())
    summary = {"path": str(bank_location(args)), "suite": args.suite, "split": args.split,
               "tasks": len(tasks), "seeds": list(chosen), "not_recorded": len(skipped),
               "stats": bank.stats()}
    bank.close()
    return _warmed(args, summary, skipped)


def _warmed(args, summary: dict, skipped: list) -> int:
    """What `bank warm` did; a Failure (the next call runs them again) when some runs were not recorded."""
    stats = summary["stats"]
    status = _out(args, summary, lambda: console().print(
        f"warmed {summary['path']} with {', '.join(summary['seeds'])} on {summary['tasks']} {args.split} "
        f"tasks: {stats['outcomes']} outcomes in {stats['clusters']} clusters", soft_wrap=True))
    if skipped:
        from jitagent.cli.options import Failure

        raise Failure(f"{len(skipped)} run(s) not recorded, e.g. {skipped[0].name} on {skipped[0].task.id}: "
                      f"{skipped[0].why_not_recorded}; run the command again to retry them")
    return status


def cmd_export(args) -> int:
    """SFT records (and with --pairs, preference pairs) from the bank's verified runs, as JSONL."""
    from jitagent.harness.seeds import spec_reader
    from jitagent.improvement.training.export import ExportConfig, preference_pairs, sft_records
    from jitagent.tasks.task import load_suite

    held_out = frozenset(t.prompt for suite in args.held_out_suite for t in load_suite(suite, "final"))
    config = ExportConfig(min_reward=args.min_reward, per_cluster=args.per_cluster, held_out=held_out,
                          pool=args.pool)
    bank = _open(args)
    written = {}
    for path, records in ((args.sft, sft_records), (args.pairs, preference_pairs)):
        if path is not None:
            rows = [json.dumps(r) for r in records(bank, spec_reader(bank), config)]
            path.write_text("".join(f"{row}\n" for row in rows))
            shared(path)
            written[str(path)] = len(rows)
    return _out(args, written, lambda: print("\n".join(f"{n} record(s) -> {p}" for p, n in written.items())))


def cmd_stats(args) -> int:
    stats = _open(args).stats()
    return _out(args, stats, lambda: console().print("\n".join(f"{k}: {x}" for k, x in stats.items()),
                                                     soft_wrap=True))


def add_commands(sub) -> None:
    shared = [common(), bank_options(old_path=True), output()]
    group = sub.add_parser("bank", help="the harness bank", parents=shared)
    cmds = group.add_subparsers(dest="bank_command", required=True, metavar="COMMAND")

    def add(name, func, help_text, *parents):
        p = cmds.add_parser(name, help=help_text, parents=[*shared, *parents])
        p.set_defaults(func=func)
        return p

    add("init", cmd_init, "create a bank holding the seeds")
    origins = ["seed", "synthesized", "repaired", "evolved"]
    add("ls", cmd_ls, "list harnesses").add_argument("--origin", choices=origins, help="only harnesses of "
                                                     "this origin")
    add("show", cmd_show, "one harness (spec, code, lineage, evidence) or adapter").add_argument(
        "name_or_id", metavar="NAME|ID", help="a harness or adapter id, or a name (the newest of that name)")
    add_adapters(add("adapters", cmd_adapters, "the solver's adapters trained on the bank's runs (`jitagent "
                     "train`)"))
    add("lineage", cmd_lineage, "a harness and its ancestors").add_argument(
        "name_or_id", metavar="NAME|ID", help="a harness id, or a name (the newest of that name)")
    p = add("search", cmd_search, "top-k harnesses for a task text")
    p.add_argument("text", help="the task")
    p.add_argument("-k", type=COUNT, default=3, help="harnesses to show")
    add("clusters", cmd_clusters, "what the bank learned: each cluster's size and best arm")
    p = add("arms", cmd_arms, "a cluster's arms: posteriors, runs, rewards, tokens, routes")
    p.add_argument("cluster", help="a cluster, as `bank clusters` lists it (e.g. type:chain_sum)")
    p.add_argument("--plot", type=Path, metavar="FILE", help="also draw the posteriors over time to this PNG")
    add("incumbents", cmd_incumbents, "the incumbent harness per cluster")
    add("rollback", cmd_rollback, "restore a cluster's previous incumbent").add_argument(
        "cluster", help="the cluster whose latest promotion to undo")
    add("reindex", cmd_reindex, "rebuild the faiss index from the database")
    add("stats", cmd_stats, "counts, index size, database size")
    p = add("warm", cmd_warm, "record the seeds' outcomes on a suite's learn split (resumable)",
            models(meta=False), budget("run; a run cut off by it is not recorded"))
    p.add_argument("--suite", required=True, help="suite name or JSONL file (see `jitagent suites`)")
    p.add_argument("--split", default="learn", choices=["learn"],
                   help="learn only: score gates evolve, final is held out")
    p.add_argument("--seeds", default=None, type=top_k,
                   help="all | top:K by a first pass (one task per type)")
    p.add_argument("--limit", type=COUNT, help="N tasks, spread over task types")
    p.add_argument("--redo", action="store_true",
                   help="run units that already have an outcome again; the new outcome replaces theirs")
    p.add_argument("--no-examples", action="store_true",
                   help="warm the seeds only, not also each seed's variant that is shown its cluster's "
                        "verified solutions (prompts.examples), which then enters every cluster's arms")
    add_export(add("export", cmd_export, "training data from the bank's verified runs: SFT records and "
                   "preference pairs, JSONL in the shapes TRL reads", learned_from("default: none")))


def add_adapters(p) -> None:
    p.add_argument("adapter", nargs="?", metavar="ID|NAME", help="with --files: the adapter to write")
    p.add_argument("--files", type=Path, metavar="DIR",
                   help="write the adapter's GGUF LoRA and PEFT folder here, for llama.cpp and vLLM")


def add_export(p) -> None:
    p.add_argument("--sft", type=Path, required=True, metavar="FILE", help="SFT records ({messages})")
    p.add_argument("--pairs", type=Path, metavar="FILE", help="preference pairs ({prompt, chosen, rejected})")
