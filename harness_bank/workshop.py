"""What code written for a cluster needs from the bank and leaves in it: the cluster's labelled tasks (each
task as given, its verifier included, so code can be tried on it again), a harness's recorded outcomes on
them, and every attempt to write code for the cluster — accepted or not, with its evidence and its cost.

Tasks and attempts are stored as JSON the bank does not interpret: it knows nothing of models or of
what a task is beyond its id."""

from __future__ import annotations

import json

from harness_bank.store import Store, insert, now, placeholders


class Workshop:
    def __init__(self, store: Store):
        self.store = store

    def record_labelled(self, cluster: str, task_id: str, task: dict) -> None:
        """Keep a task whose outcome was verified in `cluster` (once per cluster and task id)."""
        with self.store.transaction() as db:
            db.execute(insert("labelled", ("cluster", "task_id", "task", "created_at"))
                       + " ON CONFLICT (cluster, task_id) DO NOTHING",
                       (cluster, task_id, json.dumps(task), now()))

    def labelled(self, cluster: str) -> list[dict]:
        """The cluster's labelled tasks, oldest first."""
        rows = self.store.query("SELECT task FROM labelled WHERE cluster = ? ORDER BY created_at, task_id",
                                (cluster,))
        return [json.loads(r["task"]) for r in rows]

    def outcomes(self, harness_id: str, cluster: str, task_ids: list[str]) -> dict[str, dict]:
        """The harness's latest outcome in the cluster on each of these tasks that has one (reward, answer,
        prompt and completion tokens — None: unknown — and wall time), by task id."""
        if not task_ids:
            return {}
        rows = self.store.query(
            "SELECT task_id, reward, answer, prompt_tokens, completion_tokens, wall_s "
            "FROM outcomes "
            f"WHERE harness_id = ? AND cluster = ? AND task_id IN ({placeholders(task_ids)}) "
            "ORDER BY id", (harness_id, cluster, *task_ids))
        return {r["task_id"]: {k: r[k] for k in ("reward", "answer", "prompt_tokens", "completion_tokens",
                                                 "wall_s")} for r in rows}

    def record_attempt(self, *, cluster: str, stage: str, parent_id: str, harness_id: str | None,
                       accepted: bool, reason: str, detail: dict, prompt_tokens: int | None,
                       completion_tokens: int | None, wall_s: float) -> int:
        """Keep one attempt at writing a stage for the cluster; `harness_id`: the accepted harness (stored
        first), or None. The cluster's outcome count is kept with it: when to try again depends on it."""
        with self.store.transaction() as db:
            seen = db.execute("SELECT COUNT(*) FROM outcomes WHERE cluster = ?", (cluster,)).fetchone()[0]
            columns = {"cluster": cluster, "stage": stage, "parent_id": parent_id, "harness_id": harness_id,
                       "accepted": int(accepted), "reason": reason, "detail": json.dumps(detail),
                       "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                       "wall_s": wall_s, "outcomes_seen": seen, "created_at": now()}
            return db.execute(insert("toolmaking", columns) + " RETURNING id",
                              tuple(columns.values())).fetchone()[0]

    def attempts(self, cluster: str | None = None, harness_id: str | None = None) -> list[dict]:
        """Attempts at writing code, oldest first: all, a cluster's, or those that made `harness_id`."""
        where = [(column, value) for column, value in (("cluster", cluster), ("harness_id", harness_id))
                 if value is not None]
        sql = ("SELECT * FROM toolmaking"
               + (" WHERE " + " AND ".join(f"{column} = ?" for column, _ in where) if where else "")
               + " ORDER BY id")
        rows = self.store.query(sql, tuple(value for _, value in where))
        return [dict(r) | {"accepted": bool(r["accepted"]), "detail": json.loads(r["detail"])} for r in rows]

    def cluster_outcomes(self, cluster: str) -> int:
        return self.store.query("SELECT COUNT(*) FROM outcomes WHERE cluster = ?", (cluster,))[0][0]


class WorkshopFacade:
    """The workshop's calls on the bank's facade: HarnessBank inherits them, so that code outside the bank
    reaches the workshop through the bank, not through its part."""

    workshop: Workshop

    def record_labelled_task(self, cluster: str, task_id: str, task: dict) -> None:
        """Keep a task whose outcome was verified in `cluster` (once per cluster and task id)."""
        self.workshop.record_labelled(cluster, task_id, task)

    def labelled_tasks(self, cluster: str) -> list[dict]:
        """The cluster's labelled tasks, oldest first."""
        return self.workshop.labelled(cluster)

    def latest_outcomes(self, harness_id: str, cluster: str, task_ids: list[str]) -> dict[str, dict]:
        """The harness's latest outcome in the cluster on each of these tasks that has one, by task id."""
        return self.workshop.outcomes(harness_id, cluster, task_ids)

    def record_code_attempt(self, *, cluster: str, stage: str, parent_id: str, harness_id: str | None,
                            accepted: bool, reason: str, detail: dict, prompt_tokens: int | None,
                            completion_tokens: int | None, wall_s: float) -> int:
        """Keep one attempt at writing a stage of code for the cluster (see Workshop.record_attempt)."""
        return self.workshop.record_attempt(
            cluster=cluster, stage=stage, parent_id=parent_id, harness_id=harness_id, accepted=accepted,
            reason=reason, detail=detail, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
            wall_s=wall_s)

    def code_attempts(self, cluster: str | None = None, harness_id: str | None = None) -> list[dict]:
        """Attempts at writing code, oldest first: all, a cluster's, or those that made `harness_id`."""
        return self.workshop.attempts(cluster, harness_id)

    def outcome_count(self, cluster: str) -> int:
        """How many outcomes the cluster has: an attempt keeps the count, and the next one waits for more."""
        return self.workshop.cluster_outcomes(cluster)
