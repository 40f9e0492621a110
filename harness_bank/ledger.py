"""Reads of what the bank recorded, by cluster, harness and run: the clusters it has seen, each harness's
record in a cluster and outside it, the server's routes, a cluster's rewards in order, what a run came to.
For the router's evidence (retrieval.py), the views for people (views.py) and a retried request
(recorded.py).

A record is a row with `n` (outcomes), `tokens` (their mean tokens) and `known` (how many of them know
their tokens: fewer than `n`, some unknown), beside what each read names."""

from __future__ import annotations

from harness_bank.pools import in_pool
from harness_bank.store import TOKENS, Store, placeholders

RECORD = f"COUNT(*) AS n, AVG({TOKENS}) AS tokens, COUNT({TOKENS}) AS known"


class Ledger:
    def __init__(self, store: Store):
        self.store = store

    def cluster_names(self) -> list[str]:
        """Every cluster with outcomes or server runs, by name."""
        return sorted({r[0] for r in self.store.query(
            "SELECT DISTINCT cluster FROM outcomes UNION SELECT DISTINCT cluster FROM runs")})

    def outcome_counts(self) -> dict[str, tuple[int, int]]:
        """Per cluster with outcomes: how many, and on how many distinct tasks."""
        return {r["cluster"]: (r["n"], r["tasks"]) for r in self.store.query(
            "SELECT cluster, COUNT(*) AS n, COUNT(DISTINCT task_id) AS tasks FROM outcomes GROUP BY cluster")}

    def route_counts(self, cluster: str) -> dict[str, dict[str, int]]:
        """The server's runs in the cluster per harness and route."""
        routes: dict[str, dict[str, int]] = {}
        for r in self.store.query("SELECT harness_id, route, COUNT(*) AS n FROM runs WHERE cluster = ? "
                                  "GROUP BY harness_id, route", (cluster,)):
            routes.setdefault(r["harness_id"], {})[r["route"]] = r["n"]
        return routes

    def harnesses_run_in(self, cluster: str) -> list[str]:
        """The harnesses the server ran in the cluster."""
        return [r[0] for r in self.store.query("SELECT DISTINCT harness_id FROM runs WHERE cluster = ?",
                                               (cluster,))]

    def rewards_in_order(self, cluster: str) -> list[tuple[str, float]]:
        """(harness id, reward) of the cluster's outcomes, oldest first."""
        return [(r["harness_id"], r["reward"]) for r in self.store.query(
            "SELECT harness_id, reward FROM outcomes WHERE cluster = ? ORDER BY id", (cluster,))]

    def harness_id(self, name_or_id: str) -> str | None:
        """The harness with this id, else the newest with this name; None when neither."""
        rows = self.store.query("SELECT id FROM harnesses WHERE id = ? OR name = ? "
                                "ORDER BY id = ? DESC, created_at DESC LIMIT 1",
                                (name_or_id, name_or_id, name_or_id))
        return rows[0]["id"] if rows else None

    def records_by_cluster(self, harness_id: str) -> list:
        """The harness's record in each cluster it has outcomes in, with the cluster and its mean `reward`;
        most outcomes first."""
        return self.store.query(f"SELECT cluster, AVG(reward) AS reward, {RECORD} "
                                "FROM outcomes WHERE harness_id = ? GROUP BY cluster "
                                "ORDER BY COUNT(*) DESC, cluster", (harness_id,))

    def records_in(self, cluster: str) -> dict[str, object]:
        """Each harness's record in the cluster, with its `rewards` summed, by harness id."""
        return {r["harness_id"]: r for r in self.store.query(
            f"SELECT harness_id, SUM(reward) AS rewards, {RECORD} "
            "FROM outcomes "
            "WHERE cluster = ? "
            "GROUP BY harness_id", (cluster,))}

    def records_elsewhere(self, cluster: str, harness_ids: list[str], pool: str = "") -> dict[str, object]:
        """Each of these harnesses' record outside the cluster in `pool` (harness_bank.pools), with its mean
        `reward`, by harness id."""
        mine, params = in_pool("cluster", pool)
        return {r["harness_id"]: r for r in self.store.query(
            f"SELECT harness_id, AVG(reward) AS reward, {RECORD} "
            "FROM outcomes "
            f"WHERE cluster != ? AND harness_id IN ({placeholders(harness_ids)}) AND {mine} "
            "GROUP BY harness_id", (cluster, *harness_ids, *params))}

    def harness_rows(self, harness_ids: list[str]) -> dict[str, object]:
        """The id, name and origin of each of these harnesses, by id."""
        return {r["id"]: r for r in self.store.query(
            f"SELECT id, name, origin FROM harnesses WHERE id IN ({placeholders(harness_ids)})",
            tuple(harness_ids))}

    def harness_specs_by(self, generator: str) -> dict[str, str]:
        """The stored spec of every harness this generator made, by id."""
        rows = self.store.query("SELECT id, spec FROM harnesses WHERE generator = ?", (generator,))
        return {r["id"]: r["spec"] for r in rows}

    def run_outcome(self, run_id: str) -> tuple[float, str] | None:
        """The reward and verdict of the run's outcome; None when it has none."""
        rows = self.store.query("SELECT reward, verdict FROM outcomes WHERE run_id = ?", (run_id,))
        return (rows[0]["reward"], rows[0]["verdict"]) if rows else None
