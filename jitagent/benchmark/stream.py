"""`jitagent bench --stream K`: the product as a long stream meets it, K tasks of every family of a suite
in a seeded, interleaved order, answered one at a time, each scored before the next.

Every arm answers stream task k before any arm sees task k+1, so a stream cut short leaves every arm the
same tasks (paired) and machine load falls on every arm alike. The fixed arms are the `score` screen's best
seeds and the cheapest (`--fixed-seeds top:K`). A JIT arm starts from the bank its name says
(`Bench.start_bank`: the seeds, or a warm-up on `learn` whose size the report states) and meets each task
as a client's call: the task goes in without its verifier, the bench checks the answer as the client would
and reports the reward by the run's id. Nothing reads the stream ahead of time: its tasks are made with a
seed of their own, never a split's.

Resumable mid-stream: units are appended to `results.jsonl` as they finish and each JIT arm's bank stays in
`<arm>-stream.db`, so a stream stopped at task k goes on from k with its bank as it was. With
`retrain_every`, the solver's adapter is trained again on the stream's verified runs every M of them
(`improvement.retrain`) and the stream pauses while it trains (as if training ran on another machine); the
training's wall time is counted apart in `training.jsonl`. With `practice`, a failure the client reports
comes with its check, and the server tries the task again with that many other arms (`improvement.practice`)
while the stream waits; each task's tries, kept solutions, tokens and wall time are in `practice.jsonl`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from harness_bank.bank import copy_bank
from harness_bank.router import RouterConfig
from jitagent.benchmark.arms import BARE, STREAMED_ARMS, WARMED_ARMS
from jitagent.benchmark.bare import BareModel
from jitagent.benchmark.checking import scored
from jitagent.benchmark.curve import curve_report, practices, trainings
from jitagent.benchmark.ledger import unit_row
from jitagent.benchmark.progress import Lines, progress_bar
from jitagent.benchmark.report import markdown
from jitagent.benchmark.runner import Bench, BenchConfig
from jitagent.benchmark.stats import summarize
from jitagent.config.paths import shared
from jitagent.improvement.practice import PracticeConfig
from jitagent.improvement.retrain import RetrainConfig
from jitagent.models.base import ModelClient
from jitagent.models.embedded import EmbeddedModel
from jitagent.models.gguf import model_path
from jitagent.runtime.events import RunResult
from jitagent.solving.config import PipelineConfig
from jitagent.solving.events import SolveResult
from jitagent.solving.feedback import Report
from jitagent.solving.pipeline import JitPipeline
from jitagent.tasks.suites.external import STREAM_SEED
from jitagent.tasks.task import Task, VerifierSpec, load_stream


@dataclass
class StreamConfig:
    per_family: int
    seed: int = STREAM_SEED
    window: int = 100  # tasks per point of the curve
    retrain_every: int = 0  # verified runs between two adapter trainings (0: never)
    untyped: bool = False  # the JIT arms get no type nor tags, as most clients send: clusters from the text
    practice: int = 0  # arms tried again on a failed task, its check handed with the report (0: never)
    routing_only: bool = False  # the JIT arms never draw synthesis: no variant, written or free (an ablation)


class Stream:
    """One stream through `bench`'s arms (its config says which, its screen which seeds are fixed)."""

    def __init__(self, bench: Bench, config: StreamConfig):
        if unknown := set(bench.config.arms) - set(STREAMED_ARMS):
            raise ValueError(f"a stream runs the arms {list(STREAMED_ARMS)}, not {sorted(unknown)}")
        if config.routing_only and config.retrain_every:
            raise ValueError("--routing-only with --retrain-every: an adapter enters only as a variant, "
                             "which a routing-only stream never draws")
        self.bench, self.config = bench, config
        self.tasks = load_stream(bench.config.suite, config.per_family, config.seed)
        self.bare = bare_model(bench.solver) if BARE in bench.config.arms else None

    async def run(self, progress: bool = True) -> None:
        bench = self.bench
        await bench.measure_machine()
        with Units(len(self.tasks), enabled=progress) as units:
            bench.bar = units.bar
            await bench.screen()
            fixed = bench.fixed_seeds() if "fixed" in bench.config.arms else []
            pipelines = {arm: await self._pipeline(arm) for arm in bench.config.arms if arm.startswith("jit")}
            try:
                for order, task in enumerate(self.tasks):
                    rows = [await self._fixed(name, task, order) for name in fixed]
                    rows += [await self._bare(self.bare, task, order)] if self.bare else []
                    rows += [await self._jit(arm, pipeline, task, order)
                             for arm, pipeline in pipelines.items()]
                    units.done(order, task, [r for r in rows if r is not None])
            finally:
                for pipeline in pipelines.values():
                    pipeline.bank.close()

    async def _pipeline(self, arm: str) -> JitPipeline:
        """The arm's pipeline on its stream's bank: made from its start bank once, then as the stream
        left it."""
        path = self.bench.config.out / f"{arm}-stream.db"
        if not path.exists():
            start = await self.bench.start_bank(arm)
            if start is not None:
                copy_bank(start, path)
        retrain = RetrainConfig(every=self.config.retrain_every)
        # each try the budget a served unit has
        practice = PracticeConfig(tries=self.config.practice, budget_s=self.bench.unit_budget_s)
        router = RouterConfig(synth_start=0, synth_floor=0) if self.config.routing_only else RouterConfig()
        return self.bench.stream_pipeline(path, config=PipelineConfig(retrain=retrain, practice=practice,
                                                                      router=router))

    async def _fixed(self, name: str, task: Task, order: int) -> dict | None:
        arm = f"fixed:{name}"
        if self.bench.ledger.done(arm, task.id, 0, self.bench.context):
            return None
        row, _ = await self.bench._execute(arm, self.bench.seeds[name], task, 0, order=order)
        self.bench.ledger.add(row)
        return row

    async def _bare(self, model: BareModel, task: Task, order: int) -> dict | None:
        """The bare model's reply, checked as the client checks every arm's."""
        if self.bench.ledger.done(BARE, task.id, 0, self.bench.context):
            return None
        run = await scored(task, await model.run(task, self.bench.unit_budget_s))
        row = unit_row(BARE, task, 0, run, budget_exhausted=run.interrupted, route=BARE, order=order)
        row |= self.bench.context
        self.bench.ledger.trace(row, run, harness=BARE)
        self.bench.ledger.add(row)
        return row

    async def _jit(self, arm: str, pipeline: JitPipeline, task: Task, order: int) -> dict | None:
        """The task as a client sends and checks it (`Reporting`); then, where an adapter is training, the
        stream waits for it."""
        if self.bench.ledger.done(arm, task.id, 0):
            return None
        row = await self.bench._solve(pipeline, arm, task, 0, order, Reporting(task, self.config.untyped))
        self.bench.ledger.add(row)
        await self._practice(arm, pipeline, order)
        await self._train_if_due(arm, pipeline, order)
        return row

    async def _practice(self, arm: str, pipeline: JitPipeline, order: int) -> None:
        """Where the last report started practice on the task, the stream waits for it; what it tried,
        kept and cost goes to `practice.jsonl`."""
        job = pipeline.practice.job
        if job is None or job.done():
            return
        before = pipeline.bank.practice_tally()
        await pipeline.practice.settle()
        after = pipeline.bank.practice_tally()
        tokens = None if after.tokens is None or before.tokens is None else after.tokens - before.tokens
        with (self.bench.config.out / "practice.jsonl").open("a") as f:
            f.write(json.dumps({"arm": arm, "order": order, "tries": after.tries - before.tries,
                                "kept": after.kept - before.kept, "tokens": tokens,
                                "wall_s": round(after.wall_s - before.wall_s, 1)}) + "\n")
        shared(self.bench.config.out / "practice.jsonl")

    async def _train_if_due(self, arm: str, pipeline: JitPipeline, order: int) -> None:
        """Where the last report started the adapter's training, the stream waits for it; its wall time is
        the training's, counted apart."""
        job = pipeline.retrainer.job
        if job is None or job.done():
            return
        start = time.monotonic()
        await pipeline.settle()
        with (self.bench.config.out / "training.jsonl").open("a") as f:
            f.write(json.dumps({"arm": arm, "after": order, "wall_s": round(time.monotonic() - start, 1),
                                "job": pipeline.retrainer.jobs}) + "\n")
        shared(self.bench.config.out / "training.jsonl")


    def report(self, command: str) -> str:
        """The curve (curve.py), then where the JIT arms started and the screen that chose the fixed seeds."""
        ledger, out = self.bench.ledger, self.bench.config.out
        text = curve_report(ledger, self.config.window, out, command)
        warmed = [a for a in ledger.arms() if a.startswith(("warm:", "warm-examples:"))]
        if warmed and set(self.bench.config.arms) & set(WARMED_ARMS):
            units = [r for a in warmed for r in ledger.rows(a)]
            text += (f"\n\nThe warmed JIT arms started from a bank warmed on "
                     f"{len(self.bench.tasks('learn'))} `learn` tasks (never the stream's) by {len(warmed)} "
                     f"harnesses: {len(units)} units, {sum(r['wall_s'] for r in units) / 60:.1f} min."
                     f"\n\n{markdown(summarize(ledger, warmed))}")
        else:
            text += "\n\nThe JIT arms started from the seeds (no warm-up)."
        screen = summarize(ledger, [f"score:{n}" for n in self.bench.seeds])
        if screen:
            text += f"\n\nScreen on `score` (chose the fixed seeds):\n\n{markdown(screen)}"
        if jobs := trainings(out):
            text += (f"\n\nAdapter trainings (the stream paused while each ran): {len(jobs)}, "
                     f"{sum(j['wall_s'] for j in jobs) / 60:.1f} min in all, after tasks "
                     + ", ".join(str(j["after"] + 1) for j in jobs) + ".")
        text += practice_account(out)
        (out / "report.md").write_text(text + "\n")
        shared(out / "report.md")
        return text


def practice_account(out: Path) -> str:
    """What practice tried, kept and cost, per JIT arm ("" where none ran)."""
    text, jobs = "", practices(out)
    for arm in sorted({p["arm"] for p in jobs}):
        mine = [p for p in jobs if p["arm"] == arm]
        tokens = [p["tokens"] for p in mine]
        spent = "unknown tokens" if None in tokens else f"{sum(tokens):,} tokens"
        tried, tries = sum(p["tries"] > 0 for p in mine), sum(p["tries"] for p in mine)
        text += (f"\n\nPractice of {arm} (the stream paused while it ran): {len(mine)} failed tasks handed "
                 f"to it, {tried} tried again (the rest in clusters given up), {tries} tries, "
                 f"{sum(p['kept'] for p in mine)} kept as solutions; {spent}, "
                 f"{sum(p['wall_s'] for p in mine) / 60:.1f} min.")
    return text


def run_stream(config: BenchConfig, stream: StreamConfig, solver: ModelClient, meta: ModelClient,
               command: str, report_only: bool = False) -> str:
    """`report_only`: the report of the ledger as it stands, nothing run (every figure is the ledger's)."""
    run = Stream(Bench(config, solver, meta), stream)
    if not report_only:
        asyncio.run(run.run())
    return run.report(command)


@dataclass
class Reporting:
    """A client that sends a task without its verifier (and, `untyped`, without its type or tags: a tag the
    suite gives every task, `reasoning_gym`, would make one cluster of them all), checks the answer itself
    and reports the reward by the run's id, as a client's report arrives."""

    task: Task
    untyped: bool = False

    @property
    def sent(self) -> Task:
        return self.task.model_copy(update={"verifier": VerifierSpec(kind="none")}
                                    | ({"type": None, "tags": []} if self.untyped else {}))

    async def answered(self, pipeline: JitPipeline, result: SolveResult, exhausted: bool) -> RunResult:
        """The answer checked and its reward reported, with the check (the server may practise a failure
        with it, never to answer again)."""
        run = await scored(self.task, result.run)
        if run.reward is not None and (run.error is None or exhausted):  # out of budget: a real 0
            await pipeline.report_outcome(Report(run.reward, run.verdict), run_id=result.run_id,
                                          check=self.task.verifier)
        return run


def bare_model(solver: ModelClient) -> BareModel:
    """The bare arm serves the solver's own GGUF; a solver behind an endpoint has its own server for that."""
    if not isinstance(solver, EmbeddedModel):
        raise ValueError("the bare arm serves the embedded solver's GGUF; this solver is an endpoint")
    return BareModel(str(model_path(solver.name)), solver.n_ctx)


class Units:
    """Progress over the stream: a bar on a terminal, else one line per stream task with each arm's reward.
    `bar` is what `Bench` draws its set-up steps (screen, warm-up) on."""

    def __init__(self, total: int, enabled: bool = True):
        self.total = total
        self.bar = progress_bar(enabled)
        self.lines = isinstance(self.bar, Lines)
        self.job = None

    def __enter__(self) -> Units:
        self.bar.__enter__()
        self.job = None if self.lines else self.bar.add_task("stream", total=self.total)
        return self

    def __exit__(self, *exc) -> None:
        self.bar.__exit__(*exc)

    def done(self, order: int, task: Task, rows: list[dict]) -> None:
        if self.lines:
            said = ", ".join(f"{r['arm']} {r['reward']:.2f}" for r in rows) or "done before"
            print(f"[stream {order + 1}/{self.total}] {task.id}: {said}", file=sys.stderr, flush=True)
        else:
            self.bar.advance(self.job)
