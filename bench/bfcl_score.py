"""A BFCL stream's units scored by BFCL's own checker: `bfcl_eval`'s AST checker (`ast_checker`, and for the
irrelevance categories its relevance rule: right where the reply decodes to no call), run on each unit's
calls as BFCL runs it for a function-calling model (each call `{name: arguments}`; names with dots were sent
with underscores, as BFCL sends them to OpenAI-style models). The checker is imported from the unpacked
wheel with one module of it replaced: `constants.model_config`, which would import every vendor's SDK and is
read only for that name rule. Only positions every arm finished count (paired), as in the stream's report.

Per category and arm: BFCL's accuracy; BFCL's aggregates as its leaderboard weighs them (non-live AST: the
unweighted mean of simple, multiple, parallel, parallel_multiple, where simple is simple_python alone, java
and javascript left out; live AST: the live categories weighted by their full sizes in BFCL); over all
entries, each arm's paired difference against the bare model and the best fixed seed with a bootstrap 95%
interval; tokens and wall time per entry; how often the stream's own verifier (what the product learned
from) agreed with BFCL's checker, over the units it judged. A unit with no trace of its calls (one that ran
out of budget before a harness was chosen) counts as a miss, and how many there were is said.

The calls scored are those the run made of the entry's functions: a reply naming a function the entry does
not have is no call, for every arm alike (it is what a jitagent client receives: such a reply never leaves
as a call); a serving stack that passes invented names on would lose those irrelevance entries.

Usage:
  python bench/bfcl_score.py bench/results/bfcl-stream --wheel /tmp/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl
  python bench/bfcl_score.py RUN --wheel WHEEL --before AN_EARLIER_RUN_OF_THE_SAME_STREAM
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
import types
import zipfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from bfcl_suite import CATEGORIES, NO_CALL, entries  # noqa: E402

from jitagent.benchmark.curve import gap, paired, stream_rows  # noqa: E402
from jitagent.benchmark.ledger import Ledger, read_traces, total_tokens  # noqa: E402

MODEL = "jitagent"  # the model BFCL's checker is told of: one whose function names had dots made underscores
NON_LIVE = ("simple_python", "multiple", "parallel", "parallel_multiple")
LIVE = ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple")


def unpacked(wheel: Path) -> tempfile.TemporaryDirectory:
    """The wheel's `bfcl_eval` unpacked into a temporary folder and importable from there, its
    `constants.model_config` replaced (kept as long as the folder is)."""
    folder = tempfile.TemporaryDirectory()
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(folder.name, [n for n in archive.namelist() if n.startswith("bfcl_eval/")])
    sys.path.insert(0, folder.name)
    stub = types.ModuleType("bfcl_eval.constants.model_config")
    stub.MODEL_CONFIG_MAPPING = {MODEL: types.SimpleNamespace(underscore_to_dot=True)}
    sys.modules[stub.__name__] = stub
    return folder


class Checker:
    """BFCL's checker from the wheel."""

    def __init__(self, wheel: Path):
        self._dir = unpacked(wheel)
        from bfcl_eval.constants.enums import Language
        from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker
        from bfcl_eval.utils import is_empty_output, is_function_calling_format_output

        self._ast, self._python = ast_checker, Language.PYTHON
        self._empty, self._format = is_empty_output, is_function_calling_format_output

    def valid(self, category: str, entry: dict, answer: dict | None, calls: list[dict]) -> bool:
        decoded = [{call["name"]: call["arguments"]} for call in calls]
        if category in NO_CALL:
            return self._empty(decoded)
        if not self._format(decoded):
            return False
        try:
            return self._ast(entry["function"], decoded, answer["ground_truth"], self._python, category,
                             MODEL)["valid"]
        except Exception:  # the checker's own failure on a malformed value: BFCL counts it a miss
            return False


def units(run: Path) -> dict[tuple[str, str], list[dict]]:
    """Each (arm, task) unit's calls, from the traces that kept them (the last line of a unit wins), as the
    stream writes them or as a committed ledger keeps them (gzipped)."""
    calls = {}
    for trace in read_traces(run):
        if trace["repeat"] == 0 and "calls" in trace:
            calls[(trace["arm"], trace["task_id"])] = trace["calls"]
    return calls


def scored(run: Path, wheel: Path) -> tuple[dict[str, dict[int, dict]], dict[str, int]]:
    """The stream's rows (positions every arm finished), each with `bfcl` (BFCL's verdict, 0/1; a miss
    where no trace kept the unit's calls, `traced` False), and BFCL's size of each category."""
    rows = stream_rows(Ledger(run / "results.jsonl"))
    calls = units(run)
    checker, known = Checker(wheel), {e["id"]: (c, e, a) for c, e, a in entries(wheel)}
    for arm, positions in rows.items():
        for row in positions.values():
            category, entry, answer = known[row["task_id"]]
            made = calls.get((arm, row["task_id"]))
            row["traced"] = made is not None
            row["bfcl"] = float(made is not None and checker.valid(category, entry, answer, made))
    sizes = {c: sum(category == c for category, _, _ in known.values()) for c in CATEGORIES}
    return rows, sizes


def accuracy(units: list[dict]) -> float | None:
    return statistics.fmean(u["bfcl"] for u in units) if units else None


def aggregates(units: list[dict], sizes: dict[str, int]) -> dict[str, float | None]:
    """BFCL's per-category accuracies and its aggregates over the categories present: live AST weighs each
    live category by its size in BFCL, not by how many entries of it the stream had."""
    out = {c: accuracy([u for u in units if u["type"] == c]) for c in CATEGORIES}
    non_live = [out[c] for c in NON_LIVE if out[c] is not None]
    out["non-live AST"] = statistics.fmean(non_live) if non_live else None
    live = [c for c in LIVE if out[c] is not None]
    out["live AST"] = (sum(out[c] * sizes[c] for c in live) / sum(sizes[c] for c in live)) if live else None
    out["all entries"] = accuracy(units)
    return out


def pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def report(run: Path, wheel: Path, before: Path | None = None) -> str:
    rows, sizes = scored(run, wheel)
    arms = sorted(rows, key=lambda a: (a != "bare", not a.startswith("fixed:"), a))
    orders = list(rows[arms[0]]) if arms else []
    if not orders:
        return "No stream position was finished by every arm yet."
    table = {arm: aggregates(list(rows[arm].values()), sizes) for arm in arms}
    columns = ["all entries", "non-live AST", "live AST", *CATEGORIES]
    fixed = [a for a in arms if a.startswith("fixed:")]
    best = max(fixed, key=lambda a: table[a]["all entries"], default=None)
    lines = [f"{len(orders)} stream entries finished by every arm, scored by BFCL's own checker (bfcl-eval's "
             "`ast_checker`; irrelevance: no call decoded). Accuracy in %; n per category below.", "",
             "| arm | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    lines += [f"| {arm} | " + " | ".join(pct(table[arm][c]) for c in columns) + " |" for arm in arms]
    counts = {c: sum(r["type"] == c for r in rows[arms[0]].values()) for c in CATEGORIES}
    lines += ["| n | " + " | ".join(["", "", "", *(str(counts[c]) for c in CATEGORIES)]) + " |", "",
              f"Paired over the {len(orders)} entries (BFCL accuracy, points, bootstrap 95%), tokens and "
              "wall time per entry, and agreement of the stream's own verifier with BFCL's checker:", "",
              "| arm | vs bare | vs best fixed | tokens/entry | × bare's tokens | wall s/entry | "
              "verifier agrees (%) |", "|---|---|---|---|---|---|---|"]
    tokens_of = {arm: _tokens(rows[arm].values()) for arm in arms}
    bare_tokens = tokens_of.get("bare")
    for arm in arms:
        tokens = tokens_of[arm]
        ratio = tokens / bare_tokens if tokens is not None and bare_tokens else None
        judged = [r for r in rows[arm].values() if r["passed"] is not None and r["traced"]]
        agree = statistics.fmean(float(r["passed"] == bool(r["bfcl"])) for r in judged) if judged else None
        against = [_against(rows, arm, base, orders) for base in ("bare", best)]
        lines.append(f"| {arm} | {against[0]} | {against[1]} | "
                     f"{_num(tokens, ',.0f')} | {_num(ratio, '.2f')} | "
                     f"{statistics.fmean(r['wall_s'] for r in rows[arm].values()):.1f} | {pct(agree)} |")
    _draw(table, arms, run / "bfcl-categories.png")
    untraced = {arm: sum(not r["traced"] for r in rows[arm].values()) for arm in arms}
    lines += ["", f"Best fixed seed (in hindsight, BFCL accuracy over the entries): {best or '–'}. Units "
              f"with no trace of their calls, counted as misses: {untraced}.", "",
              "![BFCL accuracy per category](bfcl-categories.png)"]
    if before is not None:
        lines += ["", *_against_before(rows, scored(before, wheel)[0], before)]
    return "\n".join(lines) + "\n"


def _against_before(rows: dict[str, dict[int, dict]], earlier: dict[str, dict[int, dict]],
                    before: Path) -> list[str]:
    """Each arm against itself in an earlier run of the same stream (another version of the code), paired on
    the positions both finished with the same entry, and again without those either run ran out of budget."""
    lines = [f"Against the same arm in an earlier run of this stream (`{before}`), paired on the positions "
             "both runs finished with the same entry (BFCL accuracy, points, bootstrap 95%), and on those "
             "where neither run's unit ran out of budget (a run's budget-exhausted units may be the "
             "machine's, not the code's):", "",
             "| arm | entries | earlier | now | now − earlier | entries in budget "
             "| now − earlier, in budget |",
             "|---|---|---|---|---|---|---|"]
    for arm in (a for a in rows if a in earlier):
        orders = [k for k, row in rows[arm].items()
                  if k in earlier[arm] and earlier[arm][k]["task_id"] == row["task_id"]]
        then, now = ([table[arm][k] for k in orders] for table in (earlier, rows))
        in_budget = [k for k in orders
                     if not (earlier[arm][k]["budget_exhausted"] or rows[arm][k]["budget_exhausted"])]
        lines.append(f"| {arm} | {len(orders)} | {pct(accuracy(then))} | {pct(accuracy(now))} | "
                     f"{gap(paired(rows[arm], earlier[arm], orders, key='bfcl'))} | {len(in_budget)} | "
                     f"{gap(paired(rows[arm], earlier[arm], in_budget, key='bfcl'))} |")
    return lines


def _tokens(units) -> float | None:
    """Tokens per entry over the units whose count is known (unknown is never 0)."""
    known = [t for t in map(total_tokens, units) if t is not None]
    return statistics.fmean(known) if known else None


def _num(value: float | None, spec: str) -> str:
    return "–" if value is None else format(value, spec)


def _against(rows: dict[str, dict[int, dict]], arm: str, base: str | None, orders: list[int]) -> str:
    if base is None or base not in rows or arm == base:
        return "–"
    return gap(paired(rows[arm], rows[base], orders, key="bfcl"))


def _draw(table: dict[str, dict], arms: list[str], path: Path) -> None:
    columns = ["all entries", *CATEGORIES]
    fig, ax = plt.subplots(figsize=(12, 4))
    width = 0.8 / len(arms)
    for i, arm in enumerate(arms):
        heights = [math.nan if table[arm][c] is None else 100 * table[arm][c] for c in columns]  # no bar
        ax.bar([c + i * width for c in range(len(columns))], heights, width, label=arm)
    ax.set_xticks([c + 0.4 - width / 2 for c in range(len(columns))], columns, rotation=30, ha="right")
    ax.set_ylabel("BFCL accuracy (%)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="the stream's folder (results.jsonl, trajectories.jsonl)")
    parser.add_argument("--wheel", type=Path, required=True, help="the bfcl-eval wheel (pip download)")
    parser.add_argument("--before", type=Path, help="an earlier run of the same stream: each arm against it")
    args = parser.parse_args(argv)
    text = report(args.run, args.wheel, args.before)
    (args.run / "bfcl-report.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
