"""`jitagent train`: a LoRA adapter of the solver from the bank's verified runs — and, with `--expert`, from
verified corrections of its failed runs — kept in the bank; with `--gate SUITE`, tried on the suite's `score`
split against each cluster's best arm before its variants join the clusters' arms."""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

from jitagent.cli.common import (
    api_key,
    bank_location,
    budget,
    common,
    config_from,
    config_options,
    learned_from,
    models,
    output,
    solver_model,
)
from jitagent.cli.common import bank as bank_options
from jitagent.cli.options import CORRECTIONS, COUNT, Failure
from jitagent.cli.progress import units, waiting
from jitagent.config.paths import open_bank
from jitagent.improvement.training.correct import CorrectionConfig
from jitagent.improvement.training.lora import TrainConfig


def cmd_train(args) -> int:
    from jitagent.config.paths import training_dir
    from jitagent.improvement.training.trainer import train_adapter
    from jitagent.models import DEFAULT_MODEL, MODEL_NAMES, load_model
    from jitagent.tasks.task import load_suite, spread_over_types

    solver = solver_model(args)
    base = DEFAULT_MODEL if solver in ("embedded", "default") else solver
    if base not in MODEL_NAMES:
        raise Failure(f"--solver-model: trains an embedded model ({', '.join(MODEL_NAMES)}), "
                      f"not {solver!r}", 2)
    config = config_from(args, TrainConfig)
    gate_tasks = spread_over_types(load_suite(args.gate, "score"), args.gate_limit) if args.gate else []
    bank = open_bank(bank_location(args), cache_dir=args.data_dir, create=False)
    parent = None
    if args.parent and (parent := bank.adapter(args.parent)) is None:
        raise Failure(f"--parent: no adapter {args.parent!r} in the bank (see `bank adapters`)", 2)
    solver = load_model(base, slot="solver")
    records, tally = _records(args, bank, solver)
    with contextlib.ExitStack() as stack, contextlib.ExitStack() as loading:
        loading.enter_context(waiting(f"loading {base} into transformers"))
        bar = []

        def on_step(step: int, steps: int, info: dict) -> None:
            if not bar:  # step 0: loaded, about to train
                loading.close()
                bar.append(stack.enter_context(units("training", steps)))
            if step:
                bar[0].done(f"loss {info['loss']:.3f}, {info['examples_s']:.2f} examples/s")

        workdir = args.workdir or training_dir(bank, args.name, args.data_dir)
        adapter = train_adapter(bank, records, base_model=base, config=config, name=args.name, parent=parent,
                                workdir=workdir, tally=tally, pool=args.pool, on_step=on_step)
    summary = {"adapter": adapter.id, "name": adapter.name, "served_as": adapter.served_name,
               "stats": adapter.stats}
    if gate_tasks:
        summary["gate"] = asyncio.run(_gate(bank, solver, adapter, gate_tasks, args.budget_s))
    bank.close()
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        _say(adapter, summary.get("gate"))
    return 0


def _records(args, bank, solver) -> tuple[list[dict], object]:
    """The SFT records of the bank's verified runs, and of corrections where `--expert` asks for them (with
    their yield; None without); Failure when there is nothing to learn from."""
    from jitagent.harness.seeds import spec_reader
    from jitagent.improvement.training.correct import Yield
    from jitagent.improvement.training.export import ExportConfig
    from jitagent.improvement.training.trainer import Experts, training_data
    from jitagent.models import load_model
    from jitagent.tasks.task import load_suite, suite_names

    # never learned from: the final split of the suites named (default: every bundled suite) and the gate's
    held = [(suite, "final") for suite in args.held_out_suite or suite_names()]
    held += [(args.gate, "score")] if args.gate else []
    held_out = frozenset(t.prompt for suite, split in held for t in load_suite(suite, split))
    experts = None
    if args.expert:
        experts = Experts(load_model(args.expert, slot="expert", api_key=api_key(args)), solver,
                          CorrectionConfig(tries=args.corrections, min_reward=args.min_reward,
                                           budget_s=args.budget_s))
    tally = Yield()
    with waiting("exporting verified runs" + (" and correcting failed ones" if experts else "")):
        records = asyncio.run(training_data(bank, spec_reader(bank), ExportConfig(
            min_reward=args.min_reward, per_cluster=args.per_cluster, held_out=held_out, pool=args.pool),
            experts, tally))
    if not records:
        raise Failure("the bank holds no verified run to learn from: warm it (`bank warm`) or serve "
                      "tasks that carry verifiers first")
    return records, tally if experts else None


def _say(adapter, gate: dict | None) -> None:
    s = adapter.stats
    print(f"adapter {adapter.id} ({adapter.name}): {s['examples']} examples ({s['corrected_records']} "
          f"corrected), {s['steps']} steps, loss {s['first_loss']:.3f} -> {s['last_loss']:.3f}, "
          f"{s['train_s']:.0f} s; an HTTP back-end serves it as {adapter.served_name}")
    if gate is not None:
        print(f"gate on {gate['tasks']} score task(s): {gate['variant_reward']} with it vs "
              f"{gate['parent_reward']} without: {'accepted' if gate['accepted'] else 'refused'}")


async def _gate(bank, solver, adapter, tasks, budget_s) -> dict:
    from jitagent.improvement.training.gate import Gate, gate
    from jitagent.runtime.agent import Runtime

    state = Gate()
    with units("gate", len(tasks)) as bar:
        async for unit in gate(bank, Runtime(solver), adapter, tasks, budget_s, state):
            bar.done(f"{unit.task_id}: {unit.variant_reward:.2f} with it, {unit.parent_reward:.2f} without")
    return state.verdict()


def add_commands(sub) -> None:
    p = sub.add_parser("train", parents=[
        common(), output(), bank_options(), models(meta=False), budget("gate run"),
        learned_from("default: every bundled suite's; the --gate suite's score split is never learned from "
                     "either")],
                       help="a LoRA adapter of the solver from the bank's verified runs (and corrections)")
    config_options(p, TrainConfig)
    p.add_argument("--name", default="bank", help="the adapter's name (`bank adapters` lists it)")
    p.add_argument("--parent", metavar="ADAPTER", help="the adapter this one follows (its lineage)")
    p.add_argument("--workdir", type=Path, metavar="DIR",
                   help="keeps the checkpoint: the same command resumes there (default: beside the bank)")
    p.add_argument("--expert", metavar="MODEL", help="correct failed runs with this stronger model (e.g. "
                   "qwen2.5-coder-1.5b, or an OpenAI-compatible URL); only verified corrections are kept")
    p.add_argument("--corrections", type=COUNT, default=CorrectionConfig().tries,
                   help=f"{CORRECTIONS}, the newest first")
    p.add_argument("--gate", metavar="SUITE", help="try the adapter on this suite's score split against each "
                   "cluster's best arm; only a passed adapter's variants join the arms")
    p.add_argument("--gate-limit", type=COUNT, help="N score tasks, spread over types (default: all)")
    p.set_defaults(func=cmd_train)
