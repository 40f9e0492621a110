"""`jitagent bench`: fixed seed scaffolds vs oracles vs JIT arms, on a suite's `final` split.

Every arm runs `final` with the same solver and the same per-task budget. Units (arm, task,
repeat) are appended to `results.jsonl` as they finish; a rerun skips finished units and reruns
only those that failed for infrastructure reasons — a genuine 0 is a result. Running out of the
budget scores 0 as a genuine result (`budget_exhausted`), like a harness's own timeout.

Arms: `fixed` (seeds; with `fixed_top=K` the K best on the `score` screen and the cheapest),
`oracle` (the best seed per task type on `score`), `jit_static` (per-task synthesis, no learning),
`jit_stream` (one stream in a seeded order from a cold bank, every outcome fed back) and
`jit_warm` (the same stream from a bank warmed on `learn` with the screen's best seeds) and the tool arms
(jit_warm's stream from that bank after code was written for its clusters on `learn`, gated on `score`:
see arms.py; the stream itself writes no code — a writer never reads `final`).
Held out: the screen, the oracle and the warm-up read `score` and `learn` only; the JIT arms see a
final task's verifier only after its harness was chosen and run; nothing is tuned on `final`.
The hindsight oracle in the report is computed from the fixed seeds' `final` rows: an upper bound.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from harness_bank import HarnessBank
from harness_bank.bank import copy_bank
from jitagent.benchmark.adapted import adapted_bank
from jitagent.benchmark.arms import (
    ALL_ARMS,
    DEFAULT_ARMS,
    EXAMPLE_ABLATIONS,
    STREAM_ARMS,
    STREAM_ONLY,
    TOOL_ARMS,
    WARMED_ARMS,
)
from jitagent.benchmark.checking import scored
from jitagent.benchmark.digest import unit_context
from jitagent.benchmark.ledger import Ledger, exhausted_in_synthesis, unit_row
from jitagent.benchmark.machine import slowness
from jitagent.benchmark.progress import progress_bar
from jitagent.benchmark.stats import mean_tokens, rank
from jitagent.harness.seeds import seed_bank, seeds_for, spec_reader
from jitagent.harness.spec import HarnessSpec
from jitagent.improvement.adapters import adapter_variant, resolve
from jitagent.improvement.examples import NOTHING, Shown, examples_for, with_examples
from jitagent.improvement.recording import record_verified
from jitagent.improvement.synthesis.synthesize import SynthesisConfig
from jitagent.improvement.toolmaking import ToolmakingConfig
from jitagent.improvement.training.lora import TrainConfig
from jitagent.models.base import Cancelled, ModelClient
from jitagent.offline.evolve import Evolver
from jitagent.offline.warm import warm_bank, with_examples_variants
from jitagent.runtime.agent import Runtime
from jitagent.runtime.events import RunResult
from jitagent.solving.assembly import pipeline_on
from jitagent.solving.config import PipelineConfig
from jitagent.solving.events import SolveResult
from jitagent.solving.pipeline import JitPipeline
from jitagent.tasks.task import Task, load_suite, spread_over_types


@dataclass
class BenchConfig:
    suite: str
    out: Path
    repeats: int = 3
    n: int = 3
    budget_s: float = 60.0  # the same wall-clock budget per task for every arm
    # the probe's seconds on the machine whose seconds budget_s means (machine.py); None: this machine's
    reference_probe_s: float | None = None
    limit: int | None = None  # tasks of `final`, spread over the task types
    score_limit: int | None = None  # tasks of `score` the screen runs on; defaults to `limit`
    warm_limit: int | None = None  # tasks of `learn` the warm-up runs on; defaults to `limit`
    arms: tuple[str, ...] = DEFAULT_ARMS
    fixed_top: int | None = None  # None: all seeds on `final`; K: the K best on `score` and the cheapest one
    warm_top: int | None = 4  # seeds warmed on `learn`: the K best on `score` and the cheapest; None: all
    train: TrainConfig = field(default_factory=TrainConfig)  # the adapter arms' LoRA
    corrections: int = 0  # failed warm-up runs the tool writer corrects for the adapter's data (0: none)


class Client(Protocol):
    """A client's side of a JIT unit: the task it sends, and the run as it reads it once it has checked the
    answer (and reported it)."""

    sent: Task

    async def answered(self, pipeline: JitPipeline, result: SolveResult, exhausted: bool) -> RunResult: ...


def sampled(spec: HarnessSpec) -> bool:
    return spec.action.samples > 1 or spec.action.temperature > 0


class Bench:
    def __init__(self, config: BenchConfig, solver: ModelClient, meta: ModelClient,
                 writer: ModelClient | None = None):
        """`writer`: the tool arms' writer of code for clusters (default: the meta-model)."""
        unknown = set(config.arms) - set(ALL_ARMS)
        if unknown:
            raise ValueError(f"unknown arm(s) {sorted(unknown)}; arms: {list(ALL_ARMS)}")
        self.config = config
        self.solver = solver
        self.meta = meta
        self.drafts = Remembered(writer or meta)
        self.runtime = Runtime(solver)
        config.out.mkdir(parents=True, exist_ok=True)
        self.ledger = Ledger(config.out / "results.jsonl")
        self.context = unit_context(solver.name, config.budget_s)  # a fixed unit is reused only within it
        self.seeds = seeds_for(load_suite(config.suite))  # `plain` where some task has the client's functions
        self.slowness = 1.0  # this machine's probe over the reference's (measure_machine)
        self.adapters = {}  # the adapter arms' adapters by id (as a model takes them), once trained

    def tasks(self, split: str, every: bool = False) -> list[Task]:
        """A split's tasks spread over types, as many as its limit; `every`: all of them (code for a cluster
        is written from, and judged on, every labelled task of it)."""
        tasks = load_suite(self.config.suite, split)
        if every:
            return tasks
        limits = {"score": self.config.score_limit, "learn": self.config.warm_limit}
        return spread_over_types(tasks, limits.get(split) or self.config.limit)

    @property
    def unit_budget_s(self) -> float:
        """A unit's seconds on this machine, for every arm alike."""
        return self.config.budget_s * self.slowness

    async def measure_machine(self) -> None:
        """With a reference probe, every unit gets `budget_s` of the reference machine's model time in this
        machine's seconds (machine.slowness); the ledger's rows keep `budget_s` as asked."""
        if self.config.reference_probe_s is not None:
            self.slowness = await slowness(self.solver, self.config.reference_probe_s, self.config.budget_s,
                                           self.config.out / "machine.jsonl")

    async def run(self, progress: bool = True) -> None:
        await self.measure_machine()
        final = self.tasks("final")
        arms = self.config.arms
        if only := [a for a in arms if a in STREAM_ONLY]:
            raise ValueError(f"the arm {only[0]!r} runs in a stream (--stream), not on `final`")
        with progress_bar(progress) as bar:
            self.bar = bar
            await self.screen()
            if "fixed" in arms:
                for name in self.fixed_seeds():
                    await self._fixed(f"fixed:{name}", self.seeds[name], final,
                                      self._repeats(self.seeds[name]))
            if "fixed_adapter" in arms:
                await self._fixed_adapter(final)
            if "oracle" in arms:
                await self._oracle(final, self.oracle_choice())
            for arm in STREAM_ARMS:
                if arm in arms:
                    await self._jit(arm, final)
            if "examples_ablation" in arms:
                await self._ablation(final)

    async def screen(self) -> None:
        """Every seed once on `score`, sampled or not, where an arm picks seeds by it."""
        arms = self.config.arms
        if {"oracle", *WARMED_ARMS} & set(arms) or ("fixed" in arms and self.config.fixed_top):
            score = self.tasks("score")
            for name, spec in self.seeds.items():
                await self._fixed(f"score:{name}", spec, score, repeats=1)

    def _repeats(self, spec: HarnessSpec | None) -> int:
        return self.config.repeats if spec is None or sampled(spec) else 1

    async def _execute(self, arm: str, spec: HarnessSpec, task: Task, repeat: int, route: str = "fixed",
                       shown: Shown = NOTHING, order: int | None = None) -> tuple[dict, RunResult]:
        """One unit, traced; its ledger row and the run. `shown`: the examples it is shown."""
        deadline = time.monotonic() + self.unit_budget_s
        solver = self.solver.with_adapter(self.adapters[spec.adapter]) if spec.adapter else None
        run = await self.runtime.run(spec, task, seed=repeat, deadline=deadline, examples=shown.messages,
                                     solver=solver)
        if run.reward is None and run.client_calls:  # paused at a call no one here answers: no answer came
            run = await scored(task, run)
        exhausted = run.interrupted and time.monotonic() >= deadline
        row = unit_row(arm, task, repeat, run, budget_exhausted=exhausted, route=route, order=order,
                       examples=len(shown.sources)) | self.context
        self.ledger.trace(row, run, harness=spec.name, examples=list(shown.sources))
        return row, run

    async def _fixed(self, arm: str, spec: HarnessSpec, tasks: list[Task], repeats: int) -> None:
        job = self.bar.add_task(arm, total=len(tasks) * repeats)
        for repeat in range(repeats):
            for task in tasks:
                if not self.ledger.done(arm, task.id, repeat, self.context):
                    self.ledger.add((await self._execute(arm, spec, task, repeat))[0])
                self.bar.advance(job)

    def screened(self, k: int) -> list[str]:
        """The K best seeds on the `score` screen plus the cheapest there. Never reads `final`."""
        rows = {name: self.ledger.rows(f"score:{name}") for name in self.seeds}
        best = sorted(self.seeds, key=lambda n: rank(rows[n]))[:k]
        cheapest = min(self.seeds, key=lambda n: mean_tokens(rows[n]))
        return best + ([cheapest] if cheapest not in best else [])

    def fixed_seeds(self) -> list[str]:
        return self.screened(self.config.fixed_top) if self.config.fixed_top else list(self.seeds)

    def oracle_choice(self) -> dict[str, str]:
        """Best seed per task type on the `score` split (ties: fewer tokens). Never reads `final`."""
        by_type: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
        for name in self.seeds:
            for row in self.ledger.rows(f"score:{name}"):
                by_type[row["type"]][name].append(row)
        return {t: min(seeds, key=lambda n: rank(seeds[n])) for t, seeds in by_type.items()}

    async def _oracle(self, tasks: list[Task], choice: dict[str, str]) -> None:
        fallback = max(self.seeds, key=lambda n: statistics.fmean(
            [r["reward"] for r in self.ledger.rows(f"score:{n}")] or [0]))
        job = self.bar.add_task("oracle", total=len(tasks))
        for task in tasks:
            spec = self.seeds[choice.get(task.type, fallback)]
            for repeat in range(self._repeats(spec)):
                if not self.ledger.done("oracle", task.id, repeat):
                    self.ledger.add((await self._execute("oracle", spec, task, repeat, route="oracle"))[0])
            self.bar.advance(job)

    def warm_seeds(self) -> dict[str, HarnessSpec]:
        names = self.screened(self.config.warm_top) if self.config.warm_top else list(self.seeds)
        return {name: self.seeds[name] for name in names}

    async def _warm(self, name: str = "warm", specs: dict[str, HarnessSpec] | None = None,
                    source: Path | None = None) -> Path:
        """The warm bank, built once from the screen's best seeds on `learn` (resumable) and copied
        for every jit_warm repeat, so each stream starts from the same evidence. `specs` run after
        `source`'s (the examples variants after the seeds), into a bank of their own `name`."""
        path = self.config.out / f"{name}.db"
        if source is not None and not path.exists():
            copy_bank(source, path)
        bank = HarnessBank(path)
        seed_bank(bank)
        specs = self.warm_seeds() if specs is None else specs
        tasks = self.tasks("learn")
        job = self.bar.add_task(name, total=len(specs) * len(tasks))
        for spec in specs.values():  # the ledger mirrors the bank, so the report can show the warm-up
            for task in tasks:
                if bank.has_outcome(spec.id, task.id):
                    self.bar.advance(job)
        async for unit in warm_bank(bank, self.runtime, specs, tasks, budget_s=self.unit_budget_s,
                                     out_of_budget_scores_zero=True):
            row = unit_row(f"{name}:{unit.name}", unit.task, 0, unit.run,
                           budget_exhausted=unit.budget_exhausted)
            self.ledger.add(row)
            self.ledger.trace(row, unit.run, harness=unit.name)
            self.bar.advance(job)
        bank.close()
        return path

    async def _tooled(self, arm: str, warm: Path) -> Path:
        """The warm bank after code was written for its clusters on `learn` (gated on `score`) by the arm's
        writer, built once (resumable: its steps in tools-<arm>.jsonl) and copied for every repeat."""
        path = self.config.out / f"{arm}.db"
        if not path.exists():
            copy_bank(warm, path)
        # jit_tools and jit_tools_unverified share a writer, seeds and prompts, so their drafts too
        writer = self.meta if arm == "jit_tools_small" else self.drafts
        config = PipelineConfig(toolmaking=ToolmakingConfig(verify_heldout=arm != "jit_tools_unverified"))
        pipeline = pipeline_on(path, self.meta, self.solver, config, writer=writer)
        evolver = Evolver(pipeline, self.config.out / f"tools-{arm}.jsonl", budget_s=self.unit_budget_s)
        clusters = len({t.type for t in self.tasks("learn", every=True)})
        job = self.bar.add_task(f"tools:{arm}", total=clusters * len(config.toolmaking.stages))
        async for _ in evolver.tools(self.tasks("learn", every=True), self.tasks("score")):
            self.bar.advance(job)
        pipeline.bank.close()
        return path

    async def _warm_examples(self, warm: Path) -> Path:
        """The warm bank after each warm seed's variant with examples was warmed on `learn` too."""
        seeds = self.warm_seeds()
        variants = {n: s for n, s in with_examples_variants(seeds).items() if n not in seeds}
        return await self._warm("warm-examples", variants, source=warm)

    async def _adapted(self, warm_examples: Path) -> tuple[Path, list]:
        """The examples bank with the adapters trained on its verified runs, the first gated (adapted.py)."""
        path, adapters = await adapted_bank(self, warm_examples)
        bank = HarnessBank(path)
        self.adapters = {a.id: resolve(bank, a.id) for a in adapters}
        bank.close()
        return path, adapters

    async def _fixed_adapter(self, tasks: list[Task]) -> None:
        """The best screened seed with each adapter, alone over `final`: what the weights carry."""
        _, adapters = await self._adapted(await self._warm_examples(await self._warm()))
        seed = self.seeds[self.screened(1)[0]]
        for adapter in adapters:
            variant = adapter_variant(seed, adapter)
            await self._fixed(f"fixed_adapter:{variant.name}", variant, tasks, self._repeats(variant))

    async def start_bank(self, arm: str) -> Path | None:
        """The bank a JIT arm's stream starts from (built once, copied for each stream); None: the seeds."""
        warm = await self._warm() if arm in WARMED_ARMS else None
        if arm in TOOL_ARMS:
            warm = await self._tooled(arm, warm)
        if arm in ("jit_examples", "jit_examples_adapter"):
            warm = await self._warm_examples(warm)
        if arm == "jit_examples_adapter":
            warm, _ = await self._adapted(warm)
        return warm

    def stream_pipeline(self, bank_path: Path, learn: bool = True, config: PipelineConfig | None = None
                        ) -> JitPipeline:
        """A JIT arm's pipeline on its stream's bank: the bench's synthesis, no code written mid-stream."""
        config = (config or PipelineConfig()).model_copy(update=dict(
            learn=learn, keep_candidates=learn, synthesis=SynthesisConfig(n=self.config.n),
            online_tools=False))
        return pipeline_on(bank_path, self.meta, self.solver, config)

    async def _jit(self, arm: str, tasks: list[Task]) -> None:
        warm = await self.start_bank(arm)
        job = self.bar.add_task(arm, total=len(tasks) * self.config.repeats)
        learn = arm != "jit_static"
        for repeat in range(self.config.repeats):
            order = list(tasks)
            random.Random(repeat).shuffle(order)  # the stream's order; every JIT arm runs the same order
            if all(self.ledger.done(arm, t.id, repeat) for t in order):
                self.bar.advance(job, len(order))
                continue
            bank_path = self.config.out / f"{arm}-r{repeat}.db"
            for stale in self.config.out.glob(f"{arm}-r{repeat}.db*"):
                # a resumed stream restarts its bank: its experience must come from this stream
                stale.unlink()
            if warm is not None:
                copy_bank(warm, bank_path)
            pipeline = self.stream_pipeline(bank_path, learn)
            for position, task in enumerate(order):
                self.ledger.add(await self._solve(pipeline, arm, task, repeat, position))
                self.bar.advance(job)
            pipeline.bank.close()

    async def _solve(self, pipeline: JitPipeline, arm: str, task: Task, repeat: int, position: int,
                     client: Client | None = None) -> dict:
        """One JIT unit, traced. `client`: the task as a client sends it and what it makes of the result (the
        stream checks the answer itself and reports it by run id); None: the server verifies."""
        start = time.monotonic()
        deadline = start + self.unit_budget_s
        try:
            result = await pipeline.solve(client.sent if client else task, seed=repeat, deadline=deadline)
        except (Cancelled, TimeoutError):
            if time.monotonic() < deadline:
                raise
            return exhausted_in_synthesis(arm, task, repeat, position, time.monotonic() - start)
        exhausted = result.run.interrupted and time.monotonic() >= deadline
        run = await client.answered(pipeline, result, exhausted) if client else result.run
        row = unit_row(arm, task, repeat, run, budget_exhausted=exhausted, route=result.route,
                       harness=result.harness.id, synthesis=result.synthesis_cost, order=position,
                       examples=len(result.examples)) | self.context
        row["candidates"] = len(result.synthesis.candidates) if result.synthesis else 0
        row["broken"] = (sum(c.broken_after_repair for c in result.synthesis.candidates) if result.synthesis
                         else 0)
        self.ledger.trace(row, run, harness=result.harness.name, route=result.route,
                          examples=list(result.examples),
                          reason=result.synthesis.reason if result.synthesis else "",
                          references=[r.name for r in result.references])
        return row

    async def _ablation(self, tasks: list[Task]) -> None:
        """The best screened seed's variants with examples (EXAMPLE_ABLATIONS), each alone over the stream of
        `final` from the warm bank, each run recorded once verified: a task is shown earlier tasks' solutions,
        never its own. One order (the first repeat's); each variant in a bank of its own."""
        warm = await self._warm()
        # the best seed on the score screen that can be shown solutions (never read off `final`)
        seed = self.seeds[next(n for n in self.screened(len(self.seeds)) if self.seeds[n].solution_format)]
        order = list(tasks)
        random.Random(0).shuffle(order)
        for settings in EXAMPLE_ABLATIONS:
            variant = with_examples(seed, settings)
            arm = f"ablation:{variant.name}"
            if all(self.ledger.done(arm, t.id, 0) for t in order):
                continue
            path = self.config.out / f"ablation-{variant.name}.db"
            for stale in self.config.out.glob(path.name + "*"):  # a resumed stream restarts its bank
                stale.unlink()
            copy_bank(warm, path)
            bank = HarnessBank(path)
            bank.add_harness(variant.model_dump(mode="json"))
            spec_of = spec_reader(bank)
            job = self.bar.add_task(arm, total=len(order))
            for position, task in enumerate(order):
                cluster = bank.cluster_for(task.prompt, task.type, tuple(task.tags))
                shown = examples_for(bank, spec_of, variant, task, cluster)
                row, run = await self._execute(arm, variant, task, 0, shown=shown, order=position)
                self.ledger.add(row)
                if task.verifier.kind != "none" and row["error"] is None:  # out of budget: a genuine 0
                    record_verified(bank, task, variant, run, cluster)
                self.bar.advance(job)
            bank.close()


class Remembered:
    """A model that answers a request it has seen before with the generation it gave then (its usage
    counted again: the arm that reuses it is charged as if it had generated it). The tool arms that share
    a writer share its drafts, so an ablation of acceptance does not write them twice."""

    def __init__(self, model: ModelClient):
        self.model = model
        self.name = model.name
        self.seen: dict[str, object] = {}

    async def complete(self, messages: list[dict], **kw):
        key = json.dumps([messages, {k: v for k, v in kw.items() if k != "cancel"}], sort_keys=True)
        if key not in self.seen:
            self.seen[key] = await self.model.complete(messages, **kw)
        return self.seen[key]


def run_bench(config: BenchConfig, solver: ModelClient, meta: ModelClient, command: str,
              writer: ModelClient | None = None, report_only: bool = False) -> str:
    """`report_only`: the report of the ledger as it stands, nothing run (every figure is the ledger's)."""
    from jitagent.benchmark.report import report

    bench = Bench(config, solver, meta, writer)
    if not report_only:
        asyncio.run(bench.run())
    return report(bench, command)
