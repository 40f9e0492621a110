"""results.jsonl (one line per finished unit: arm, task, repeat) and trajectories.jsonl beside it."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path

from jitagent.common.usage import known_sum
from jitagent.config.paths import shared
from jitagent.tasks.task import Task


class Ledger:
    """The last line for a unit wins; a unit with an infrastructure error is not done."""

    def __init__(self, path: Path):
        self.path = path
        self.units: dict[tuple[str, str, int], dict] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                row = json.loads(line)
                self.units[(row["arm"], row["task_id"], row["repeat"])] = row

    def done(self, arm: str, task_id: str, repeat: int, context: dict | None = None) -> bool:
        """Whether the unit has a result to keep: infrastructure failures are rerun, and so is a unit run
        in another `context` (digest.unit_context: runtime, model, budget) where one is given."""
        row = self.units.get((arm, task_id, repeat))
        if row is None or row["error"] is not None:
            return False
        return context is None or all(row.get(key) == value for key, value in context.items())

    def add(self, row: dict) -> None:
        self.units[(row["arm"], row["task_id"], row["repeat"])] = row
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")
        shared(self.path)

    def trace(self, row: dict, run, **extra) -> None:
        """What each unit's harness did, to read why an arm won or lost."""
        events = [{"kind": e.kind, "text": e.text[:600]} for e in run.trajectory.events]
        events.append({"kind": "verdict", "text": run.verdict[:600]})  # the task's verdict ends a trace
        with self.path.with_name("trajectories.jsonl").open("a") as f:
            f.write(json.dumps({k: row[k] for k in ("arm", "task_id", "repeat", "reward")} | extra |
                               {"answer": run.answer, "calls": run.client_calls, "verdict": run.verdict,
                                  "events": events}) + "\n")
        shared(self.path.with_name("trajectories.jsonl"))

    def rows(self, arm: str) -> list[dict]:
        return [r for (a, _, _), r in self.units.items() if a == arm]

    def arms(self) -> list[str]:
        return list(dict.fromkeys(a for a, _, _ in self.units))


def read_traces(run: Path) -> list[dict]:
    """A run's trajectories, in the order written: `trajectories.jsonl` as a run writes it, or gzipped as a
    committed ledger keeps it; none where neither is there."""
    plain = run / "trajectories.jsonl"
    path = plain if plain.is_file() else plain.with_suffix(".jsonl.gz")
    if not path.is_file():
        return []
    with (gzip.open(path, "rt") if path.suffix == ".gz" else path.open()) as f:
        return [json.loads(line) for line in f if line.strip()]


def unit_row(arm: str, task: Task, repeat: int, run, *, budget_exhausted: bool, route: str = "fixed",
             harness: str = "", synthesis=None, order: int | None = None, examples: int = 0) -> dict:
    """One finished unit. Running out of the bench's per-task budget is the arm's result, not
    infrastructure; synthesis cost is None (unknown) where it was not counted. `examples`: the verified
    solutions its harness was shown (their tokens are in its execution tokens)."""
    cost = synthesis
    return {"arm": arm, "task_id": task.id, "type": task.type, "repeat": repeat, "order": order,
            "at": time.time(),
            "reward": run.reward, "passed": run.passed, "error": None if budget_exhausted else run.error,
            "budget_exhausted": budget_exhausted, "route": route, "harness": harness or run.harness_id,
            "examples": examples,
            "execution_tokens": run.cost.tokens, "prompt_tokens": run.cost.prompt_tokens,
            "completion_tokens": run.cost.completion_tokens,
            "synthesis_tokens": cost.synthesis.tokens if cost else 0,
            "repair_tokens": known_sum(cost.repair.tokens, cost.dry_run.tokens) if cost else 0,
            "wall_s": run.cost.wall_s + ((cost.synthesis.wall_s + cost.repair.wall_s + cost.dry_run.wall_s)
                                         if cost else 0)}


def exhausted_in_synthesis(arm: str, task: Task, repeat: int, order: int, wall_s: float) -> dict:
    """The budget ran out before a harness was chosen: a genuine 0 whose partial cost was not counted."""
    return {"arm": arm, "task_id": task.id, "type": task.type, "repeat": repeat, "order": order,
            "at": time.time(),
            "reward": 0.0, "passed": False, "error": None, "budget_exhausted": True, "route": "synthesized",
            "harness": "", "execution_tokens": 0, "prompt_tokens": 0, "completion_tokens": 0,
            "synthesis_tokens": None, "repair_tokens": None,
            "wall_s": wall_s}


def total_tokens(row: dict) -> float | None:
    return known_sum(row["synthesis_tokens"], row["repair_tokens"], row["execution_tokens"])
