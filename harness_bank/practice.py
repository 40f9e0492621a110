"""Practice: the tries a server made in the background on a task its client reported failed (and handed
the check for), each kept with its cost, and the verified ones among their cluster's solutions — its
later tasks' examples and the adapter's training data.

A try is never an outcome: only failed tasks are tried again, so their successes would flatter the arms that
made them, and the router must weigh what its clients were served. So routing, admission and the cluster's
records never read this table; `solutions` does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from harness_bank.embedder import Embedder
from harness_bank.pools import in_pool
from harness_bank.records import BankError, Solution
from harness_bank.store import TOKENS, Store, insert, now, placeholders


@dataclass(frozen=True, kw_only=True)
class PracticeTry:
    """One try: the served run whose failure it practised, the harness that tried, what it earned and cost.
    `solution`: its turns where it is kept (verified at the practice's bar), else None."""

    run_id: str
    harness_id: str
    cluster: str
    task_id: str
    task_text: str
    reward: float | None  # None: the check did not judge it
    verdict: str
    solution: list[dict] | None
    prompt_tokens: int | None
    completion_tokens: int | None
    wall_s: float
    evidence: str  # what verified it: `practice:KIND` (the check's kind)


@dataclass(frozen=True)
class PracticeTally:
    """Tries, those kept, and their cost; tokens None where any try's count is unknown."""

    tries: int
    kept: int
    tokens: int | None
    wall_s: float


class PracticeLog:
    def __init__(self, store: Store):
        self.store = store

    def record(self, attempt: PracticeTry, vector: np.ndarray) -> int:
        """Keep one try (its harness stored first) with its task's embedding; its id."""
        if attempt.reward is not None and not 0.0 <= attempt.reward <= 1.0:
            raise BankError(f"reward must be in [0, 1], got {attempt.reward}")
        row = {"run_id": attempt.run_id, "harness_id": attempt.harness_id, "cluster": attempt.cluster,
               "task_id": attempt.task_id, "task_text": attempt.task_text, "reward": attempt.reward,
               "verdict": attempt.verdict[:500], "evidence": attempt.evidence,
               "solution": None if attempt.solution is None else json.dumps(attempt.solution),
               "prompt_tokens": attempt.prompt_tokens, "completion_tokens": attempt.completion_tokens,
               "wall_s": attempt.wall_s, "vector": np.asarray(vector, dtype=np.float32).tobytes(),
               "created_at": now()}
        with self.store.transaction() as db:
            return db.execute(insert("practice", row) + " RETURNING id", tuple(row.values())).fetchone()[0]

    def solutions(self, cluster: str | None, min_reward: float, limit: int | None,
                  pool: str = "") -> list[Solution]:
        """The kept tries of `cluster` (None: every cluster of `pool`) with reward ≥ `min_reward`, newest
        first, as solutions (`run_id` `practice:N`)."""
        mine, params = in_pool("cluster", pool)
        where = f"reward >= ? AND solution IS NOT NULL AND {mine}" + ("" if cluster is None else
                                                                       " AND cluster = ?")
        params = (min_reward, *params) + (() if cluster is None else (cluster,))
        rows = self.store.query(
            "SELECT id, harness_id, cluster, task_id, task_text, solution, reward, verdict, evidence, "
            f"vector, created_at FROM practice WHERE {where} ORDER BY id DESC"
            + ("" if limit is None else " LIMIT ?"), params + (() if limit is None else (limit,)))
        return [Solution(outcome_id=None, run_id=f"practice:{r['id']}", harness_id=r["harness_id"],
                         cluster=r["cluster"], task_id=r["task_id"], task_text=r["task_text"],
                         turns=json.loads(r["solution"]), reward=r["reward"], verdict=r["verdict"],
                         evidence=r["evidence"], vector=np.frombuffer(r["vector"], dtype=np.float32),
                         created_at=r["created_at"]) for r in rows]

    def tally(self, run_ids: list[str] | None = None, cluster: str | None = None) -> PracticeTally:
        """Every try (or those of the served runs `run_ids`, or of a cluster), kept and cost."""
        if run_ids is not None and not run_ids:
            return PracticeTally(0, 0, 0, 0.0)
        where, params = ("1 = 1", ()) if run_ids is None else (f"run_id IN ({placeholders(run_ids)})",
                                                              tuple(run_ids))
        if cluster is not None:
            where, params = f"{where} AND cluster = ?", (*params, cluster)
        row = self.store.query(
            f"SELECT COUNT(*) AS tries, COUNT(solution) AS kept, SUM({TOKENS}) AS tokens, "
            f"COUNT({TOKENS}) AS known, SUM(wall_s) AS wall FROM practice WHERE {where}", params)[0]
        tokens = int(row["tokens"] or 0) if row["known"] == row["tries"] else None
        return PracticeTally(row["tries"], row["kept"], tokens, float(row["wall"] or 0.0))


class PracticeFacade:
    """The practice log's calls on the bank's facade (HarnessBank inherits them)."""

    practice: PracticeLog
    embedder: Embedder
    _has_harness: Callable[[str], bool]

    def record_practice(self, attempt: PracticeTry) -> int:
        """Keep one try of a failed task (see PracticeLog); its harness must be stored first."""
        if not attempt.task_text.strip():
            raise BankError("task_text must not be empty")
        if not self._has_harness(attempt.harness_id):
            raise BankError(f"unknown harness id {attempt.harness_id!r}")
        return self.practice.record(attempt, self.embedder.embed_one(attempt.task_text))

    def practice_tally(self, run_ids: list[str] | None = None, cluster: str | None = None) -> PracticeTally:
        return self.practice.tally(run_ids, cluster)
