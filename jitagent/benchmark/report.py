"""report.md and the figures: the arms side by side, per task type, against the best fixed seed."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from pathlib import Path

from harness_bank.router import ROUTES
from jitagent.benchmark.arms import ADAPTER, PLAIN_ADAPTER
from jitagent.benchmark.ledger import Ledger, total_tokens
from jitagent.benchmark.stats import (
    HINDSIGHT,
    best_fixed,
    hindsight_rows,
    paired_difference,
    per_task,
    summarize,
    wall_percentiles,
)
from jitagent.common.usage import known_sum
from jitagent.config.paths import shared

JIT_ARMS = ("jit_examples_adapter", "jit_examples", "jit_tools", "jit_tools_small", "jit_tools_unverified",
            "jit_warm", "jit_stream", "jit_static")
LEARNING = ("jit", "ablation:", "fixed_adapter:")  # the arms read against the goals
COLORS = {"jit_examples_adapter": "tab:cyan", "jit_examples": "tab:brown", "jit_tools": "tab:purple",
          "jit_tools_small": "tab:pink", "jit_tools_unverified": "tab:olive", "jit_warm": "tab:red",
          "jit_stream": "tab:orange", "jit_static": "tab:gray"}


def _num(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.0f}"


def markdown(rows: list[dict]) -> str:
    lines = ["| arm | success (mean reward) | strict pass | 95% CI | vs best fixed seed (paired 95% CI) | "
             "repeats | tokens/task synth | repair+dry | exec | total | wall s/task | broken | routes "
             f"{'/'.join(ROUTES)} | out of budget | units with unknown tokens | infra errors |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        vs = r["vs_best"]
        versus = "–" if vs is None else (f"{vs[0] * 100:+.1f} ({vs[1] * 100:+.1f} to {vs[2] * 100:+.1f}), "
                                        f"{vs[3]} tasks")
        routes = "–" if r["routes"] is None else "/".join(f"{r['routes'][k]:.0%}" for k in ROUTES)
        lines.append(f"| {r['arm']} | {r['success']:.1%} | {r['strict']:.1%} | "
                     f"{r['ci'][0]:.1%}–{r['ci'][1]:.1%} | {versus} | "
                     f"{r['repeats']} | {_num(r['synthesis_tokens'])} | {_num(r['repair_tokens'])} | "
                     f"{_num(r['execution_tokens'])} | {_num(total_tokens(r))} | {r['wall_s']:.1f} | "
                     f"{r['broken_rate']:.1%} | {routes} | {r['out_of_budget']:.0%} | {r['unknown_tokens']} "
                     "| "
                     f"{r['infra_errors']} |")
    return "\n".join(lines)


def per_type(ledger: Ledger, arms: list[str], extra: dict[str, list[dict]] | None = None) -> str:
    """Mean reward per task type and arm: where an arm wins and where it loses."""
    cells: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for arm in arms:
        for r in (extra or {}).get(arm) or ledger.rows(arm):
            cells[arm][r["type"]].append(r["reward"])
    types = sorted({t for by_type in cells.values() for t in by_type})
    lines = ["| arm | " + " | ".join(types) + " |", "|---|" + "---|" * len(types)]
    for arm, by_type in cells.items():
        lines.append(f"| {arm} | " + " | ".join(f"{statistics.fmean(by_type[t]):.2f}" if by_type[t] else "-"
                                                for t in types) + " |")
    return "\n".join(lines)


def wall_times(ledger: Ledger, arms: list[str], budget_s: float,
               extra: dict[str, list[dict]] | None = None) -> str:
    """Each arm's unit wall time against the per-unit budget: a deadline that holds keeps p99 and the
    maximum near the budget."""
    lines = [f"| arm | units | wall p50 s | p99 s | max s | over the {budget_s:g} s budget |",
             "|---|---|---|---|---|---|"]
    for arm in arms:
        units = (extra or {}).get(arm) or ledger.rows(arm)
        if units:
            p50, p99, most = wall_percentiles(units)
            over = sum(r["wall_s"] > budget_s for r in units)
            lines.append(f"| {arm} | {len(units)} | {p50:.1f} | {p99:.1f} | {most:.1f} | {over} |")
    return "\n".join(lines)


def phases(ledger: Ledger) -> str:
    """Minutes of unit wall time per phase of the run (screen, warm, fixed, oracle, each JIT arm)."""
    minutes: dict[str, float] = defaultdict(float)
    for (arm, _, _), row in ledger.units.items():
        minutes[arm.split(":")[0]] += row["wall_s"] / 60
    return ", ".join(f"{phase} {m:.1f} min" for phase, m in minutes.items())


def plots(ledger: Ledger, rows: list[dict], out: Path, command: str) -> list[Path]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5))
    points = [(total_tokens(r), r["success"] * 100, r["arm"]) for r in rows if total_tokens(r) is not None]
    for x, y, name in points:
        color = COLORS.get(name, "tab:green" if "oracle" in name else "tab:blue")
        ax.scatter(x, y, color=color)
        ax.annotate(name.removeprefix("fixed:"), (x, y), fontsize=7, xytext=(3, 3),
                    textcoords="offset points")
    front, best = [], -1.0
    for x, y, name in sorted(points):
        if y > best and name != HINDSIGHT:
            front.append((x, y))
            best = y
    if front:
        ax.plot(*zip(*front), "k--", linewidth=1, label="Pareto front (hindsight oracle excluded)")
    ax.set_xscale("log")
    pareto = _finish(fig, ax, "tokens per task (synthesis + repair + execution, log)", "success on final (%)",
                     command, out / "pareto.png")

    fig, ax = plt.subplots(figsize=(8, 4.5))
    baseline = best_fixed(ledger)
    fixed_reward = {r["task_id"]: r["reward"] for r in ledger.rows(baseline)} if baseline else {}
    for arm in JIT_ARMS:
        by_repeat: dict[int, list[tuple[int, str, float]]] = defaultdict(list)
        for r in ledger.rows(arm):
            by_repeat[r["repeat"]].append((r["order"], r["task_id"], r["reward"]))
        if not by_repeat:
            continue
        curves, fixed_curves = [], []
        for seq in by_repeat.values():
            seq.sort()
            curves.append(_cumulative([reward for _, _, reward in seq]))
            fixed_curves.append(_cumulative([fixed_reward.get(t, 0.0) for _, t, _ in seq]))
        length = min(len(c) for c in curves)
        x = range(1, length + 1)
        ax.plot(x, [statistics.fmean(c[i] for c in curves) for i in range(length)], color=COLORS[arm],
                label=arm)
        if arm == "jit_stream" and baseline:  # the same tasks in the same order, run by the best fixed seed
            ax.plot(x, [statistics.fmean(c[i] for c in fixed_curves) for i in range(length)],
                    color="tab:blue", linestyle=":", label=f"{baseline} (same order)")
    if not ax.lines:  # no learning arm ran: no stream to draw
        plt.close(fig)
        return [pareto]
    stream = _finish(fig, ax, "position in the task stream", "cumulative success (%)", command,
                     out / "stream.png")
    return [pareto, stream]


def _cumulative(rewards: list[float]) -> list[float]:
    total, curve = 0.0, []
    for i, reward in enumerate(rewards, 1):
        total += reward
        curve.append(total / i * 100)
    return curve


def _finish(fig, ax, xlabel: str, ylabel: str, command: str, path: Path) -> Path:
    """Label, print the command that made the figure under it, save."""
    import matplotlib.pyplot as plt

    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    fig.text(0.01, 0.01, command, fontsize=6)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(path, dpi=110)
    shared(path)
    plt.close(fig)
    return path


def report(bench, command: str) -> str:
    ledger = bench.ledger
    hindsight, choice = hindsight_rows(ledger)
    extra = {HINDSIGHT: hindsight} if hindsight else {}
    ablations = [a for a in ledger.arms() if a.startswith(("ablation:", "fixed_adapter:"))]
    arms = [f"fixed:{n}" for n in bench.seeds] + ["oracle", HINDSIGHT, *JIT_ARMS, *ablations]
    rows = summarize(ledger, arms, extra)
    images = plots(ledger, rows, bench.config.out, command)
    text = (f"`{command}`\n\n{markdown(rows)}\n\nBest fixed seed on `final` (the paired baseline): "
            f"{best_fixed(ledger) or '–'}. Hindsight oracle (the best fixed seed per type chosen on "
            f"`final` itself — the upper bound of routing among the seeds run there, not a competitor): "
            + ", ".join(f"{t} → {s}" for t, s in sorted(choice.items(), key=str)) + ".\n\n")
    if any(r["arm"].startswith(LEARNING) for r in rows):
        text += goals(ledger, rows, hindsight) + "\n\n"
    text += "Mean reward per task type:\n\n" + per_type(ledger, [r["arm"] for r in rows], extra) + "\n\n"
    warmed = [a for a in ledger.arms() if a.startswith(("warm:", "warm-examples:"))]
    warm = summarize(ledger, warmed)
    if warm:
        units = [r for a in warmed for r in ledger.rows(a)]
        tokens = [r["execution_tokens"] for r in units]
        text += (f"Warm-up on `learn` (once, shared by every jit_warm repeat): {len(units)} units, "
                 f"{_num(known_sum(*tokens))} tokens, "
                 f"{sum(r['wall_s'] for r in units) / 60:.1f} min\n\n{markdown(warm)}\n\n")
    text += tools_section(bench, rows)
    text += adapter_section(bench, rows)
    text += f"Unit wall time per phase: {phases(ledger)}\n\n"
    text += (f"Unit wall time against the budget:\n\n"
             f"{wall_times(ledger, [r['arm'] for r in rows], bench.config.budget_s, extra)}\n\n")
    text += "\n\n".join(f"![{p.stem}]({p.name})" for p in images)  # beside report.md; each shows the command
    screen = summarize(ledger, [f"score:{n}" for n in bench.seeds])
    if screen:
        picked = ", ".join(f"{t} → {s}" + ("" if _scored(bench, s, t) else " (every seed scored 0 there)")
                           for t, s in sorted(bench.oracle_choice().items(), key=str))
        text += ("\n\nScreen on `score` (one run per seed; chooses the oracle, the fixed seeds run on "
                 "`final` "
                 f"and the seeds warmed on `learn`):\n\n{markdown(screen)}\n\nOracle choice per type: "
                 f"{picked}")
    (bench.config.out / "report.md").write_text(text + "\n")
    shared(bench.config.out / "report.md")
    return text


def _scored(bench, seed: str, task_type: str) -> bool:
    """Whether `seed` earned anything on the screen's tasks of `task_type`."""
    return any(r["reward"] > 0 for r in bench.ledger.rows(f"score:{seed}") if r["type"] == task_type)


def goals(ledger: Ledger, rows: list[dict], hindsight: list[dict]) -> str:
    """The learning arms against the goals: paired against the best fixed seed and the hindsight oracle,
    tokens against the best fixed seed's, the exploit share, and success over the stream's thirds (first,
    middle, last by position) with the gain over the best fixed seed on each third's tasks."""
    by_arm = {r["arm"]: r for r in rows}
    baseline = by_arm.get(best_fixed(ledger) or "")
    baseline_units = ledger.rows(baseline["arm"]) if baseline else []
    lines = ["| arm | success | vs best fixed seed (paired 95% CI) | vs hindsight oracle (paired 95% CI) | "
             "× best seed's tokens | exploit | stream thirds (gain over the best fixed seed, points) |",
             "|---|---|---|---|---|---|---|"]
    for arm in [r["arm"] for r in rows if r["arm"].startswith(LEARNING)]:
        units = ledger.rows(arm)
        tokens, theirs = total_tokens(by_arm[arm]), total_tokens(baseline) if baseline else None
        ratio = "unknown" if tokens is None or not theirs else f"{tokens / theirs:.2f}"
        routed = [r for r in units if r["route"] in ROUTES]
        exploit = f"{sum(r['route'] == 'exploit' for r in routed) / len(routed):.0%}" if routed else "–"
        lines.append(f"| {arm} | {by_arm[arm]['success']:.1%} | {_paired(units, baseline_units)} | "
                     f"{_paired(units, hindsight)} | {ratio} | {exploit} | {thirds(units, baseline_units)} |")
    return "Against the goals:\n\n" + "\n".join(lines)


def _paired(units: list[dict], baseline: list[dict] | None) -> str:
    if not baseline:
        return "–"
    diff, low, high, n = paired_difference(units, baseline)
    return f"{diff * 100:+.1f} ({low * 100:+.1f} to {high * 100:+.1f}), {n} tasks"


def thirds(units: list[dict], baseline: list[dict]) -> str:
    """Mean reward over the first, middle and last third of the stream's positions (all repeats), and its
    gain in points over `baseline` on the same tasks: the thirds hold different tasks, so the gain is what
    shows learning."""
    ordered = [r for r in units if r.get("order") is not None]
    if not ordered:
        return "–"
    length = max(r["order"] for r in ordered) + 1
    parts = [[r for r in ordered if r["order"] * 3 // length == third] for third in range(3)]
    text = " → ".join(f"{statistics.fmean(r['reward'] for r in p):.2f}" if p else "–" for p in parts)
    theirs = per_task(baseline)
    gains = [[r["reward"] - theirs[r["task_id"]] for r in p if r["task_id"] in theirs] for p in parts]
    if not any(gains):
        return text
    points = " → ".join(f"{statistics.fmean(g) * 100:+.1f}" if g else "–" for g in gains)
    return f"{text} ({points})"


def tools_section(bench, rows: list[dict]) -> str:
    """Per tool arm: the code written for each cluster ahead of time (accepted, gated, rejected, and why),
    what it cost, and that cost amortized over the stream against the best fixed seed's tokens."""
    from jitagent.benchmark.arms import TOOL_ARMS

    by_arm = {r["arm"]: r for r in rows}
    best = by_arm.get(best_fixed(bench.ledger) or "")
    text = ""
    for arm in TOOL_ARMS:
        state = bench.config.out / f"tools-{arm}.jsonl"
        if state.exists() and arm in by_arm:
            steps = [json.loads(line) for line in state.read_text().splitlines()]
            text += tools_summary(arm, steps, len(bench.ledger.rows(arm)), by_arm[arm], best)
            text += tools_table(steps) + "\n"
    return text


def adapter_section(bench, rows: list[dict]) -> str:
    """The adapter arms' LoRA: what it learned from, what training and corrections cost, its gate, and that
    cost amortized over the `final` units of the arms offering it."""
    from harness_bank import HarnessBank

    path = bench.config.out / "adapter.db"
    if not path.exists():
        return ""
    bank = HarnessBank(path)
    adapters = [a for a in (bank.adapter(ADAPTER), bank.adapter(PLAIN_ADAPTER)) if a is not None]
    bank.close()
    return "".join(adapter_summary(bench, rows, a) for a in adapters)


def adapter_summary(bench, rows: list[dict], adapter) -> str:
    s, gate = adapter.stats, adapter.gate or {}
    used = [r for r in rows if r["arm"].endswith(f"@{adapter.id[:8]}")
            or (adapter.name == ADAPTER and r["arm"] == "jit_examples_adapter")]
    tasks = sum(len(bench.ledger.rows(r["arm"])) for r in used)
    expert = known_sum(s.get("correction_prompt_tokens"), s.get("correction_completion_tokens"))
    corrected = (f"; corrections by the tool writer: {s.get('corrections_kept', 0)} verified of "
                 f"{s.get('corrections_tried', 0)} failed runs tried, {_num(expert)} tokens, "
                 f"{s.get('correction_wall_s', 0) / 60:.1f} min") if "corrections_tried" in s else ""
    gated = ("; not gated" if not gate else "; an ablation, never an arm" if gate.get("ablation") else
             f"; gate on {gate['tasks']} `score` tasks: {_fmt(gate['variant_reward'])} with it vs "
             f"{_fmt(gate['parent_reward'])} without ({'passed' if gate['accepted'] else 'refused'}, "
             f"{_num(gate.get('tokens'))} tokens, {gate['wall_s'] / 60:.1f} min)")
    per_unit = s["train_s"] / tasks if tasks else None
    return (f"Adapter `{adapter.name}` ({adapter.id}, LoRA rank {adapter.config['rank']} of "
            f"{adapter.base_model}): "
            f"{s['examples']} records of verified `learn` runs ({s['corrected_records']} corrected, "
            f"{s['skipped']} too long), {s['steps']} steps, {_num(s['tokens'])} tokens trained on, loss "
            f"{s['first_loss']:.3f} → {s['last_loss']:.3f}; training {s['train_s'] / 60:.1f} min on 2 "
            f"cores{corrected}{gated}. Training amortized over the {tasks} `final` units of the arms "
            "offering it: " + ("–" if per_unit is None else f"{per_unit:.1f} s per unit")
            + " (no prompt tokens: an adapter adds none at test time).\n\n")


def writer_tokens(step: dict) -> int | None:
    return known_sum(step["writer_prompt_tokens"], step["writer_completion_tokens"])


def tools_summary(arm: str, steps: list[dict], stream_tasks: int, row: dict, best: dict | None) -> str:
    writer = known_sum(*map(writer_tokens, steps))
    runs = known_sum(*(s["execution_tokens"] for s in steps))
    minutes = sum(s["wall_s"] for s in steps) / 60
    return (f"Code written ahead of time for `{arm}` (on `learn`, gated on `score`; its stream writes "
            f"none): {sum(s['accepted'] for s in steps)} of {len(steps)} stages accepted; writer "
            f"{_num(writer)} tokens, labelling and gate runs {_num(runs)} tokens, {minutes:.1f} min. "
            f"{amortized(known_sum(writer, runs), stream_tasks, row, best)}\n\n")


def tools_table(steps: list[dict]) -> str:
    lines = ["| cluster | stage | parent | harness | held-out parent → harness | score gate parent → "
             "harness | writer tokens | run tokens | min | why |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for s in steps:
        harness = (s["harness"] or "–") + (" ✓" if s["accepted"] else "")
        lines.append(f"| {s['cluster']} | {s['stage'] or '–'} | {s['parent'] or '–'} | {harness} | "
                     f"{_pair(s['heldout_parent'], s['heldout_harness'])} | "
                     f"{_pair(s['gate_parent'], s['gate_harness'])} | {_num(writer_tokens(s))} | "
                     f"{_num(s['execution_tokens'])} | {s['wall_s'] / 60:.1f} | {s['reason'][:160]} |")
    return "\n".join(lines) + "\n"


def amortized(ahead: float | None, tasks: int, arm: dict, best: dict | None) -> str:
    """The ahead-of-time tokens per stream task, and the stream length at which they are paid back."""
    if ahead is None or not tasks:
        return "Amortization: unknown."
    line = f"Amortized over this stream's {tasks} units: {ahead / tasks:,.0f} tokens per task."
    own, theirs = total_tokens(arm), total_tokens(best) if best else None
    if own is None or theirs is None:
        return line
    if own < theirs:
        return line + (f" Break-even in tokens against {best['arm']}: {ahead / (theirs - own):,.0f} tasks "
                       f"({own:,.0f} vs {theirs:,.0f} tokens per task in the stream).")
    return line + (f" No break-even in tokens: the stream costs {own:,.0f} per task vs {best['arm']}'s "
                   f"{theirs:,.0f}.")


def _pair(before: float | None, after: float | None) -> str:
    return "–" if before is None and after is None else f"{_fmt(before)} → {_fmt(after)}"


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"
