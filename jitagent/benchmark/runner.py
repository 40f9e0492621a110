"""`jitagent bench`: fixed seed scaffolds vs the oracle router vs JIT static vs JIT streaming.

Every arm runs the suite's `final` split with the same solver and the same per-task budget.
Units (arm, task, repeat) are appended to `results.jsonl` as they finish; a rerun skips finished
units and reruns only those that failed for infrastructure reasons — a genuine 0 is a result.
The budget is part of the experiment: a unit that runs out of it scores 0 as a genuine result
(`budget_exhausted`), like a harness's own timeout. Seeds are screened on `score` (one run each);
`fixed_top=K` then runs only the K best and the cheapest on `final`, when 13 do not fit.
Held out: the oracle's choice of seed per task type is computed on the `score` split only; the
JIT arms see a final task's verifier only after its harness was chosen and run (streaming then
learns from it, as a stream would); no threshold or rule is tuned on `final`.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from rich.progress import Progress

from harness_bank import HarnessBank
from jitagent.catalog import load_seeds, seed_bank
from jitagent.models.base import Cancelled, ModelClient
from jitagent.pipeline import JitPipeline, PipelineConfig
from jitagent.runtime.agent import Runtime
from jitagent.spec import HarnessSpec
from jitagent.synthesis.synthesize import SynthesisConfig
from jitagent.tasks import Task, load_suite


@dataclass
class BenchConfig:
    suite: str
    out: Path
    repeats: int = 3
    n: int = 3
    budget_s: float = 60.0  # the same wall-clock budget per task for every arm
    limit: int | None = None  # tasks of `final`, spread over the task types
    score_limit: int | None = None  # tasks of `score` the oracle chooses on; defaults to `limit`
    arms: tuple[str, ...] = ("fixed", "oracle", "jit_static", "jit_stream")
    fixed_top: int | None = None  # None: all seeds on `final`; K: the K best on `score` and the cheapest one


def sampled(spec: HarnessSpec) -> bool:
    return spec.action.samples > 1 or spec.action.temperature > 0


class Ledger:
    """results.jsonl: one line per finished unit; the last line for a unit wins."""

    def __init__(self, path: Path):
        self.path = path
        self.units: dict[tuple[str, str, int], dict] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                row = json.loads(line)
                self.units[(row["arm"], row["task_id"], row["repeat"])] = row

    def done(self, arm: str, task_id: str, repeat: int) -> bool:
        row = self.units.get((arm, task_id, repeat))
        return row is not None and row["error"] is None  # infrastructure failures are rerun

    def add(self, row: dict) -> None:
        self.units[(row["arm"], row["task_id"], row["repeat"])] = row
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")

    def trace(self, row: dict, run, **extra) -> None:
        """trajectories.jsonl beside the ledger: what each unit's harness did, to read why an arm won or lost."""
        events = [{"kind": e.kind, "text": e.text[:600]} for e in run.trajectory.events if e.kind != "result"]
        with self.path.with_name("trajectories.jsonl").open("a") as f:
            f.write(json.dumps({k: row[k] for k in ("arm", "task_id", "repeat", "reward")} | extra |
                               {"answer": run.answer, "verdict": run.verdict, "events": events}) + "\n")

    def rows(self, arm: str) -> list[dict]:
        return [r for (a, _, _), r in self.units.items() if a == arm]


def _row(arm: str, task: Task, repeat: int, run, deadline: float, *, route: str = "fixed", harness: str = "",
         synthesis=None, order: int | None = None) -> dict:
    cost = synthesis
    # the bench's own deadline is the per-task budget: running out of it is the arm's result, not infrastructure
    exhausted = run.interrupted and time.monotonic() >= deadline
    return {"arm": arm, "task_id": task.id, "type": task.type, "repeat": repeat, "order": order,
            "reward": run.reward, "passed": run.passed, "error": None if exhausted else run.error, "budget_exhausted": exhausted,
            "route": route, "harness": harness or run.harness_id,
            "execution_tokens": run.cost.tokens, "synthesis_tokens": cost.synthesis.tokens if cost else 0,
            "repair_tokens": (None if cost.repair.tokens is None or cost.dry_run.tokens is None else cost.repair.tokens + cost.dry_run.tokens) if cost else 0,
            "wall_s": run.cost.wall_s + ((cost.synthesis.wall_s + cost.repair.wall_s + cost.dry_run.wall_s) if cost else 0)}


def _exhausted_in_synthesis(arm: str, task: Task, repeat: int, order: int, wall_s: float) -> dict:
    """The budget ran out before a harness was chosen: a genuine 0 whose partial cost was not counted."""
    return {"arm": arm, "task_id": task.id, "type": task.type, "repeat": repeat, "order": order, "reward": 0.0,
            "passed": False, "error": None, "budget_exhausted": True, "route": "synthesized", "harness": "",
            "execution_tokens": 0, "synthesis_tokens": None, "repair_tokens": None, "wall_s": wall_s}


class Bench:
    def __init__(self, config: BenchConfig, solver: ModelClient, meta: ModelClient):
        self.config = config
        self.solver = solver
        self.meta = meta
        self.runtime = Runtime(solver)
        config.out.mkdir(parents=True, exist_ok=True)
        self.ledger = Ledger(config.out / "results.jsonl")
        self.seeds = load_seeds()

    def tasks(self, split: str) -> list[Task]:
        limit = (self.config.score_limit or self.config.limit) if split == "score" else self.config.limit
        return spread_over_types(load_suite(self.config.suite, split), limit)

    async def run(self, progress: bool = True) -> None:
        final = self.tasks("final")
        arms = self.config.arms
        with Progress(disable=not progress, transient=True) as bar:
            self.bar = bar
            if "oracle" in arms or ("fixed" in arms and self.config.fixed_top):
                score = self.tasks("score")
                for name, spec in self.seeds.items():  # a screening pass: one run each, sampled or not
                    await self._fixed(f"score:{name}", spec, score, repeats=1)
            if "fixed" in arms:
                for name in self.fixed_seeds():
                    await self._fixed(f"fixed:{name}", self.seeds[name], final, self._repeats(self.seeds[name]))
            if "oracle" in arms:
                await self._oracle(final, self.oracle_choice())
            if "jit_static" in arms:
                await self._jit("jit_static", final, learn=False)
            if "jit_stream" in arms:
                await self._jit("jit_stream", final, learn=True)

    def _repeats(self, spec: HarnessSpec | None) -> int:
        return self.config.repeats if spec is None or sampled(spec) else 1

    async def _execute(self, arm: str, spec: HarnessSpec, task: Task, repeat: int, route: str = "fixed") -> dict:
        deadline = time.monotonic() + self.config.budget_s
        run = await self.runtime.run(spec, task, seed=repeat, deadline=deadline)
        row = _row(arm, task, repeat, run, deadline, route=route)
        self.ledger.trace(row, run, harness=spec.name)
        return row

    async def _fixed(self, arm: str, spec: HarnessSpec, tasks: list[Task], repeats: int) -> None:
        job = self.bar.add_task(arm, total=len(tasks) * repeats)
        for repeat in range(repeats):
            for task in tasks:
                if not self.ledger.done(arm, task.id, repeat):
                    self.ledger.add(await self._execute(arm, spec, task, repeat))
                self.bar.advance(job)

    def fixed_seeds(self) -> list[str]:
        """All seeds, or the K best on `score` plus the cheapest there (the token yardstick). Never reads `final`."""
        k = self.config.fixed_top
        if not k:
            return list(self.seeds)
        screened = {name: self.ledger.rows(f"score:{name}") for name in self.seeds}
        best = sorted(self.seeds, key=lambda n: _rank(screened[n]))[:k]
        cheapest = min(self.seeds, key=lambda n: _mean_tokens(screened[n]))
        return best + ([cheapest] if cheapest not in best else [])

    def oracle_choice(self) -> dict[str, str]:
        """Best seed per task type on the `score` split (ties: fewer tokens). Never reads `final`."""
        by_type: dict[str, dict[str, list[dict]]] = defaultdict(lambda: defaultdict(list))
        for name in self.seeds:
            for row in self.ledger.rows(f"score:{name}"):
                by_type[row["type"]][name].append(row)
        return {t: min(seeds, key=lambda n: _rank(seeds[n])) for t, seeds in by_type.items()}

    async def _oracle(self, tasks: list[Task], choice: dict[str, str]) -> None:
        fallback = max(self.seeds, key=lambda n: statistics.fmean([r["reward"] for r in self.ledger.rows(f"score:{n}")] or [0]))
        job = self.bar.add_task("oracle", total=len(tasks))
        for task in tasks:
            spec = self.seeds[choice.get(task.type, fallback)]
            for repeat in range(self._repeats(spec)):
                if not self.ledger.done("oracle", task.id, repeat):
                    self.ledger.add(await self._execute("oracle", spec, task, repeat, route="oracle"))
            self.bar.advance(job)

    async def _jit(self, arm: str, tasks: list[Task], learn: bool) -> None:
        job = self.bar.add_task(arm, total=len(tasks) * self.config.repeats)
        for repeat in range(self.config.repeats):
            order = list(tasks)
            random.Random(repeat).shuffle(order)  # the stream's order; static runs the same order
            bank_path = self.config.out / f"{arm}-r{repeat}.db"
            if not all(self.ledger.done(arm, t.id, repeat) for t in order):
                for stale in self.config.out.glob(f"{arm}-r{repeat}.db*"):
                    stale.unlink()  # a resumed stream restarts its bank: its experience must come from this stream
                bank = HarnessBank(bank_path)
                seed_bank(bank)
                pipeline = JitPipeline(bank, self.meta, self.solver, PipelineConfig(
                    learn=learn, keep_candidates=learn, synthesis=SynthesisConfig(n=self.config.n)))
                for position, task in enumerate(order):
                    self.ledger.add(await self._solve(pipeline, arm, task, repeat, position))
                    self.bar.advance(job)
                bank.close()
            else:
                self.bar.advance(job, len(order))

    async def _solve(self, pipeline: JitPipeline, arm: str, task: Task, repeat: int, position: int) -> dict:
        start = time.monotonic()
        deadline = start + self.config.budget_s
        try:
            result = await pipeline.solve(task, seed=repeat, deadline=deadline)
        except (Cancelled, TimeoutError):
            if time.monotonic() < deadline:
                raise
            return _exhausted_in_synthesis(arm, task, repeat, position, time.monotonic() - start)
        row = _row(arm, task, repeat, result.run, deadline, route=result.route, harness=result.harness.id,
                   synthesis=result.synthesis_cost, order=position)
        row["candidates"] = len(result.synthesis.candidates) if result.synthesis else 0
        row["broken"] = sum(c.broken_after_repair for c in result.synthesis.candidates) if result.synthesis else 0
        self.ledger.trace(row, result.run, harness=result.harness.name, route=result.route,
                          reason=result.synthesis.reason if result.synthesis else "", references=[r["name"] for r in result.references])
        return row


def _mean_tokens(rows: list[dict]) -> float:
    """Mean tokens for ranking seeds by cost: an unknown count never passes for the cheapest."""
    if any(r["execution_tokens"] is None for r in rows):
        return math.inf
    return statistics.fmean(r["execution_tokens"] for r in rows)


def _rank(rows: list[dict]) -> tuple[float, float]:
    """Sort key of a seed's screened runs, best first: higher mean reward, then fewer tokens."""
    return -statistics.fmean(r["reward"] for r in rows), _mean_tokens(rows)


def spread_over_types(tasks: list[Task], limit: int | None) -> list[Task]:
    """The first `limit` tasks taken round-robin over task types, so a cut keeps every type."""
    if not limit or limit >= len(tasks):
        return tasks
    by_type: dict[str, list[Task]] = defaultdict(list)
    for task in tasks:
        by_type[task.type].append(task)
    queues = list(by_type.values())
    picked: list[Task] = []
    while len(picked) < limit:
        for queue in queues:
            if queue and len(picked) < limit:
                picked.append(queue.pop(0))
    return picked


def bootstrap_ci(per_task: list[float], rounds: int = 2000, seed: int = 0) -> tuple[float, float]:
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(per_task, k=len(per_task))) for _ in range(rounds))
    return means[int(0.025 * rounds)], means[int(0.975 * rounds) - 1]


def summarize(ledger: Ledger, arms: list[str]) -> list[dict]:
    rows = []
    for arm in arms:
        units = [r for r in ledger.rows(arm)]
        if not units:
            continue
        per_task: dict[str, list[float]] = defaultdict(list)
        for r in units:
            per_task[r["task_id"]].append(r["reward"])
        means = [statistics.fmean(v) for v in per_task.values()]
        low, high = bootstrap_ci(means)

        def mean_of(key):  # over the units that know it; how many do not is reported beside it
            values = [r[key] for r in units if r.get(key) is not None]
            return statistics.fmean(values) if values else None
        candidates = sum(r.get("candidates", 0) for r in units)
        rows.append({"arm": arm, "success": statistics.fmean(means), "ci": (low, high), "tasks": len(per_task),
                     "repeats": max(r["repeat"] for r in units) + 1, "synthesis_tokens": mean_of("synthesis_tokens"),
                     "repair_tokens": mean_of("repair_tokens"), "execution_tokens": mean_of("execution_tokens"),
                     "wall_s": mean_of("wall_s"), "broken_rate": sum(r.get("broken", 0) for r in units) / candidates if candidates else 0.0,
                     "routes": {k: sum(r["route"] == k for r in units) / len(units) for k in ("reused", "synthesized", "fallback")},
                     "infra_errors": sum(r["error"] is not None for r in units),
                     "out_of_budget": sum(bool(r.get("budget_exhausted")) for r in units) / len(units),
                     "unknown_tokens": sum(total_tokens(r) is None for r in units)})
    return rows


def total_tokens(row: dict) -> float | None:
    parts = [row["synthesis_tokens"], row["repair_tokens"], row["execution_tokens"]]
    return None if any(p is None for p in parts) else sum(parts)


def markdown(rows: list[dict]) -> str:
    fmt = lambda v: "unknown" if v is None else f"{v:.0f}"  # noqa: E731
    lines = ["| arm | success | 95% CI | repeats | tokens/task synth | repair+dry | exec | wall s/task | broken | reused/synth/fallback "
             "| out of budget | units with unknown tokens | infra errors |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        routes = r["routes"]
        lines.append(f"| {r['arm']} | {r['success']:.1%} | {r['ci'][0]:.1%}–{r['ci'][1]:.1%} | {r['repeats']} | "
                     f"{fmt(r['synthesis_tokens'])} | {fmt(r['repair_tokens'])} | {fmt(r['execution_tokens'])} | "
                     f"{r['wall_s']:.1f} | {r['broken_rate']:.1%} | {routes['reused']:.0%}/{routes['synthesized']:.0%}/"
                     f"{routes['fallback']:.0%} | {r['out_of_budget']:.0%} | {r['unknown_tokens']} | {r['infra_errors']} |")
    return "\n".join(lines)


def per_type(ledger: Ledger, arms: list[str]) -> str:
    """Mean reward per task type and arm: where an arm wins and where it loses."""
    cells: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for arm in arms:
        for r in ledger.rows(arm):
            cells[arm][r["type"]].append(r["reward"])
    types = sorted({t for by_type in cells.values() for t in by_type})
    lines = ["| arm | " + " | ".join(types) + " |", "|---|" + "---|" * len(types)]
    for arm, by_type in cells.items():
        lines.append(f"| {arm} | " + " | ".join(f"{statistics.fmean(by_type[t]):.2f}" if by_type[t] else "-" for t in types) + " |")
    return "\n".join(lines)


def plots(ledger: Ledger, rows: list[dict], out: Path, command: str) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    points = [(total_tokens(r), r["success"] * 100, r["arm"]) for r in rows if total_tokens(r) is not None]
    for x, y, name in points:
        ax.scatter(x, y, color="tab:red" if name.startswith("jit") else ("tab:green" if name == "oracle" else "tab:blue"))
        ax.annotate(name.removeprefix("fixed:"), (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    front, best = [], -1.0
    for x, y, _ in sorted(points):
        if y > best:
            front.append((x, y))
            best = y
    if front:
        ax.plot(*zip(*front), "k--", linewidth=1, label="Pareto front")
    pareto = _finish(fig, ax, "tokens per task (synthesis + repair + execution)", "success on final (%)",
                     command, out / "pareto.png")

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for arm, color in (("jit_stream", "tab:red"), ("jit_static", "tab:gray")):
        by_repeat: dict[int, list[tuple[int, float]]] = defaultdict(list)
        for r in ledger.rows(arm):
            by_repeat[r["repeat"]].append((r["order"], r["reward"]))
        if not by_repeat:
            continue
        curves = []
        for seq in by_repeat.values():
            seq.sort()
            total, curve = 0.0, []
            for i, (_, reward) in enumerate(seq, 1):
                total += reward
                curve.append(total / i * 100)
            curves.append(curve)
        length = min(len(c) for c in curves)
        ax.plot(range(1, length + 1), [statistics.fmean(c[i] for c in curves) for i in range(length)], color=color, label=arm)
    stream = _finish(fig, ax, "position in the task stream", "cumulative success (%)", command, out / "stream.png")
    return [pareto, stream]


def _finish(fig, ax, xlabel: str, ylabel: str, command: str, path: Path) -> Path:
    """Label, print the command that made the figure under it, save."""
    import matplotlib.pyplot as plt

    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend()
    fig.text(0.01, 0.01, command, fontsize=6)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def report(bench: Bench, command: str) -> str:
    arms = [f"fixed:{n}" for n in bench.seeds] + ["oracle", "jit_static", "jit_stream"]
    rows = summarize(bench.ledger, arms)
    images = plots(bench.ledger, rows, bench.config.out, command)
    text = markdown(rows) + "\n\nMean reward per task type:\n\n" + per_type(bench.ledger, [r["arm"] for r in rows]) + "\n\n"
    text += "\n".join(f"![{p.stem}]({p})\n\n`{command}`" for p in images)
    screen = summarize(bench.ledger, [f"score:{n}" for n in bench.seeds])
    if screen:
        choice = ", ".join(f"{t} → {s}" for t, s in sorted(bench.oracle_choice().items()))
        text += f"\n\nScreen on `score` (one run per seed; chooses the oracle and the fixed seeds run on `final`):\n\n" \
                f"{markdown(screen)}\n\nOracle choice per type: {choice}"
    (bench.config.out / "report.md").write_text(text + "\n")
    return text


def run_bench(config: BenchConfig, solver: ModelClient, meta: ModelClient, command: str) -> str:
    bench = Bench(config, solver, meta)
    asyncio.run(bench.run())
    return report(bench, command)
