"""A stream read as a curve: per window of tasks, every arm's mean reward and strict pass rate, its paired
difference against the best fixed seed (in hindsight, over the whole stream), tokens per task (prompt and
completion apart), and the cumulative regret to the per-family hindsight oracle of the fixed arms.

Only the stream positions every arm finished are read (a stream cut short is compared on its paired prefix);
everything here is recomputed from the ledger's rows alone (`order` is a row's position in the stream).
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from pathlib import Path

from harness_bank.router import ROUTES
from jitagent.benchmark.arms import BARE
from jitagent.benchmark.ledger import Ledger, total_tokens
from jitagent.benchmark.stats import best_per_type, bootstrap_ci, known_mean, rank
from jitagent.common.usage import known_sum
from jitagent.config.paths import shared

ORACLE = "per-family oracle"
Rows = dict[str, dict[int, dict]]  # each arm's ledger rows by stream position


def stream_rows(ledger: Ledger) -> Rows:
    """Each stream arm's rows by position, over the positions every arm finished."""
    by_arm: dict[str, dict[int, dict]] = defaultdict(dict)
    for arm in ledger.arms():
        if arm.startswith(("fixed:", "jit")) or arm == BARE:
            for row in ledger.rows(arm):
                if row.get("order") is not None and row["repeat"] == 0:
                    by_arm[arm][row["order"]] = row
    shared = set.intersection(*(set(rows) for rows in by_arm.values())) if by_arm else set()
    return {arm: {k: rows[k] for k in sorted(shared)} for arm, rows in by_arm.items()}


def best_fixed(rows: Rows) -> str | None:
    """The fixed seed best over the whole stream (in hindsight): the paired baseline."""
    fixed = [a for a in rows if a.startswith("fixed:")]
    return min(fixed, key=lambda a: rank(list(rows[a].values())), default=None)


def oracle(rows: Rows) -> dict[int, dict]:
    """Per family, the fixed arm best over the family's stream tasks (an upper bound: it reads the stream)."""
    fixed = {a: list(positions.values()) for a, positions in rows.items() if a.startswith("fixed:")}
    if not fixed:
        return {}
    choice = best_per_type(fixed)
    return {k: rows[choice[r["type"]]][k] | {"arm": ORACLE} for k, r in rows[next(iter(fixed))].items()}


def paired(arm: dict[int, dict], base: dict[int, dict], orders: list[int],
           key: str = "reward") -> tuple[float, float, float]:
    """Mean difference arm − base of `key` over `orders`, with a paired bootstrap 95% interval."""
    diffs = [arm[k][key] - base[k][key] for k in orders]
    if not diffs:
        return math.nan, math.nan, math.nan
    low, high = bootstrap_ci(diffs)
    return statistics.fmean(diffs), low, high


def summary(units: list[dict]) -> dict:
    """Mean reward, strict pass rate, tokens per task (all, prompt, completion), wall time, out of budget."""
    return {"reward": statistics.fmean(r["reward"] for r in units),
            "strict": statistics.fmean(bool(r["passed"]) for r in units),
            "tokens": known_mean([r | {"total": total_tokens(r)} for r in units], "total"),
            "prompt": known_mean(units, "prompt_tokens"),
            "completion": known_mean(units, "completion_tokens"),
            "wall_s": known_mean(units, "wall_s"),
            "exhausted": sum(bool(r.get("budget_exhausted")) for r in units)}


def trainings(out: Path) -> list[dict]:
    """The adapter trainings a stream paused for (`training.jsonl`), in order."""
    return jsonl(out / "training.jsonl")


def practices(out: Path) -> list[dict]:
    """The practice a stream paused for (`practice.jsonl`), one line per failed task tried again."""
    return jsonl(out / "practice.jsonl")


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def windows(orders: list[int], size: int) -> list[list[int]]:
    return [orders[i:i + size] for i in range(0, len(orders), size)]


def _pct(x: float | None) -> str:
    return "–" if x is None or math.isnan(x) else f"{100 * x:.1f}%"


def gap(d: tuple[float, float, float]) -> str:
    mean, low, high = d
    return "–" if math.isnan(mean) else f"{100 * mean:+.1f} ({100 * low:+.1f} to {100 * high:+.1f})"


def _num(x: float | None) -> str:
    return "–" if x is None else f"{x:,.0f}"


def curve_report(ledger: Ledger, window: int, out: Path, command: str) -> str:
    rows = stream_rows(ledger)
    if not rows or not next(iter(rows.values())):
        return "No stream position was finished by every arm yet."
    base_arm = best_fixed(rows)
    arms = sorted(rows, key=lambda a: (not a.startswith("fixed:"), a))
    if base_arm is not None:
        rows[ORACLE] = oracle(rows)
        arms.append(ORACLE)
    orders = list(rows[arms[0]])
    parts = [f"`{command}`", "",
             f"{len(orders)} stream tasks finished by every arm; best fixed seed over the stream (in "
             f"hindsight, the paired baseline): {base_arm or '–'}; {ORACLE}: the best fixed arm per family "
             "over the stream (an upper bound, it reads the stream's answers)."]
    last = orders[-min(300, len(orders) // 2 or 1):]
    for title, span in (("Whole stream", orders), (f"Last {len(last)} tasks", last)):
        parts += ["", f"{title}:", "", span_table(rows, arms, base_arm, span)]
    cuts = windows(orders, window)
    parts += ["", window_tables(rows, arms, base_arm, cuts)]
    if base_arm is not None:
        parts += ["", f"Cumulative regret to the {ORACLE} (reward points lost) at each window's end:", "",
                  "| arm | " + " | ".join(str(c[-1] + 1) for c in cuts) + " |", "|---|" + "---|" * len(cuts)]
        for arm in arms[:-1]:
            regret = regret_curve(rows[arm], rows[ORACLE], orders)
            ends = [regret[orders.index(c[-1])] for c in cuts]
            parts.append(f"| {arm} | " + " | ".join(f"{r:.1f}" for r in ends) + " |")
    after = [job["after"] for job in trainings(out)]
    parts += ["", per_family(rows, arms), "", changes(rows, arms, cuts, after)]
    if base_arm is not None:
        parts += ["", synthesis_account(rows, arms, base_arm, orders)]
    figure = draw(rows, arms, base_arm, cuts, out / "stream-curve.png", command)
    return "\n".join(parts + ["", f"![stream curve]({figure.name})"])


def span_table(rows: Rows, arms: list[str], base_arm: str | None, span: list[int]) -> str:
    """Every arm over some stream positions, against the best fixed seed and the oracle (paired). Tokens per
    task count synthesis and repair too; the run's prompt and completion tokens are its execution's."""
    base = rows.get(base_arm, {})
    lines = ["| arm | mean reward | strict pass | vs best fixed (paired 95% CI) | vs oracle | tokens/task | "
             "run's prompt | run's completion | × best's tokens | wall s/task | out of budget |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    base_tokens = summary([base[k] for k in span])["tokens"] if base else None
    for arm in arms:
        s = summary([rows[arm][k] for k in span])
        ratio = f"{s['tokens'] / base_tokens:.2f}" if s["tokens"] and base_tokens else "–"
        lines.append(f"| {arm} | {_pct(s['reward'])} | {_pct(s['strict'])} | "
                     f"{gap(paired(rows[arm], base, span)) if base else '–'} | "
                     f"{gap(paired(rows[arm], rows[ORACLE], span)) if base else '–'} | "
                     f"{_num(s['tokens'])} | {_num(s['prompt'])} | {_num(s['completion'])} | {ratio} | "
                     f"{s['wall_s']:.1f} | {s['exhausted']} |")
    return "\n".join(lines)


def window_tables(rows: Rows, arms: list[str], base_arm: str | None,
                  cuts: list[list[int]]) -> str:
    """Per window: mean reward (strict pass), the paired difference against the best fixed seed; tokens."""
    base = rows.get(base_arm, {})
    head = ["| arm | " + " | ".join(f"{c[0] + 1}–{c[-1] + 1}" for c in cuts) + " |",
            "|---|" + "---|" * len(cuts)]
    lines = [f"Per window of {len(cuts[0])} tasks: mean reward (strict pass), and the paired difference "
             f"against {base_arm or 'the best fixed seed'}:", "", *head]
    for arm in arms:
        cells = []
        for cut in cuts:
            s = summary([rows[arm][k] for k in cut])
            cells.append(f"{_pct(s['reward'])} ({_pct(s['strict'])})"
                         + (f", {gap(paired(rows[arm], base, cut))}" if base and arm != base_arm else ""))
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    lines += ["", "Tokens per task per window (execution, synthesis and repair):", "", *head]
    for arm in arms:
        lines.append(f"| {arm} | " + " | ".join(_num(summary([rows[arm][k] for k in c])["tokens"])
                                                for c in cuts) + " |")
    return "\n".join(lines)


def regret_curve(arm: dict[int, dict], best: dict[int, dict], orders: list[int]) -> list[float]:
    total, out = 0.0, []
    for k in orders:
        total += best[k]["reward"] - arm[k]["reward"]
        out.append(total)
    return out


def per_family(rows: Rows, arms: list[str]) -> str:
    families = sorted({r["type"] for r in next(iter(rows.values())).values()})
    lines = ["Mean reward per family over the stream:", "",
             "| arm | " + " | ".join(families) + " |", "|---|" + "---|" * len(families)]
    for arm in arms:
        cells = []
        for family in families:
            units = [r for r in rows[arm].values() if r["type"] == family]
            cells.append(f"{statistics.fmean(r['reward'] for r in units):.2f}")
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def changes(rows: Rows, arms: list[str], cuts: list[list[int]], trainings: list[int]) -> str:
    """What changed when, per window of each JIT arm: its routes, the tasks shown verified solutions, the
    synthesis and repair tokens it spent, and the adapter trainings that ended in it."""
    lines = ["What changed when (JIT arms, per window): routes (exploit / explore / synthesized / fallback / "
             "variant), tasks shown examples, synthesis + repair tokens per task, adapter trainings:", "",
             "| arm | window | routes | shown examples | synthesis tokens/task | trainings |",
             "|---|---|---|---|---|---|"]
    for arm in (a for a in arms if a.startswith("jit")):
        for cut in cuts:
            units = [rows[arm][k] for k in cut]
            counts = " / ".join(str(sum(r["route"] == route for r in units)) for route in ROUTES)
            spent = known_mean([r | {"spent": known_sum(r["synthesis_tokens"], r["repair_tokens"])}
                                for r in units], "spent")
            trained = sum(cut[0] <= k <= cut[-1] for k in trainings)
            lines.append(f"| {arm} | {cut[0] + 1}–{cut[-1] + 1} | {counts} | "
                         f"{sum(bool(r.get('examples')) for r in units)} | {_num(spent)} | {trained} |")
    return "\n".join(lines)


def synthesis_account(rows: Rows, arms: list[str], base_arm: str, orders: list[int]) -> str:
    """What the meta-model's variants came to, per JIT arm: the units that ran one (route `synthesized`),
    their mean reward and its paired difference against the best fixed seed and the oracle on the same tasks,
    and every synthesis and repair token the arm spent (the units whose synthesis wrote nothing valid, route
    `fallback`, included) as a share of all its tokens."""
    lines = ["Synthesis accounted for (JIT arms): the units that ran a meta-model's variant, their reward "
             f"against {base_arm} and the {ORACLE} on the same tasks (paired), and what synthesis and repair "
             "cost of the arm's tokens:", "",
             "| arm | units run on a variant | their mean reward | vs best fixed | vs oracle | fallbacks | "
             "synthesis + repair tokens | share of the arm's tokens |", "|---|---|---|---|---|---|---|---|"]
    for arm in (a for a in arms if a.startswith("jit")):
        units = [rows[arm][k] for k in orders]
        ran = [k for k in orders if rows[arm][k]["route"] == "synthesized"]
        spent = known_sum(*(known_sum(r["synthesis_tokens"], r["repair_tokens"]) for r in units))
        every = known_sum(*(total_tokens(r) for r in units))
        share = "–" if spent is None or not every else f"{100 * spent / every:.1f}%"
        reward = _pct(statistics.fmean(rows[arm][k]["reward"] for k in ran)) if ran else "–"
        lines.append(f"| {arm} | {len(ran)} | {reward} | {gap(paired(rows[arm], rows[base_arm], ran))} | "
                     f"{gap(paired(rows[arm], rows[ORACLE], ran))} | "
                     f"{sum(r['route'] == 'fallback' for r in units)} | {_num(spent)} | {share} |")
    return "\n".join(lines)


def draw(rows: Rows, arms: list[str], base_arm: str | None, cuts: list[list[int]],
         path: Path, command: str) -> Path:
    """Success per window and cumulative regret to the per-family oracle, every arm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    ends = [c[-1] + 1 for c in cuts]
    orders = list(next(iter(rows.values())))
    for arm in arms:
        left.plot(ends, [summary([rows[arm][k] for k in c])["reward"] for c in cuts], marker="o", label=arm)
        if base_arm is not None and arm != ORACLE:
            right.plot([k + 1 for k in orders], regret_curve(rows[arm], rows[ORACLE], orders), label=arm)
    left.set(xlabel="stream position (end of window)", ylabel="mean reward in the window", ylim=(0, 1))
    right.set(xlabel="stream position", ylabel=f"cumulative regret to the {ORACLE}")
    for ax in (left, right):
        ax.grid(alpha=0.3)
    left.legend(fontsize=8)
    fig.suptitle(command, fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    shared(path)
    plt.close(fig)
    return path
