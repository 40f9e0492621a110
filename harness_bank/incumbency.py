"""Who holds each cluster: admission inside an outcome's transaction, the log of decisions, rollback.

What to promote is the policy's rule (admission.py); this keeps the incumbents and the decisions in
the store. A cluster's writers take turns on its lock in every replica, so concurrent admissions
decide as they would have one after another.
"""

from __future__ import annotations

from harness_bank.admission import AdmissionPolicy, Decision, Stats
from harness_bank.records import BankError, Incumbent, Rollback
from harness_bank.store import TOKENS, Store, insert, now


class Incumbency:
    def __init__(self, store: Store):
        self.store = store

    def lock_cluster(self, db, cluster: str) -> None:
        """Hold the cluster until the transaction `db` ends."""
        self.store.lock(db, f"cluster:{cluster}")

    def cluster_stats(self, cluster: str, harness_id: str, db=None) -> Stats | None:
        """`db`: the connection inside a running transaction; otherwise a locked read."""
        sql = f"SELECT reward, {TOKENS}, wall_s FROM outcomes WHERE cluster = ? AND harness_id = ?"
        args = (cluster, harness_id)
        rows = db.execute(sql, args).fetchall() if db is not None else self.store.query(sql, args)
        if not rows:
            return None
        return Stats.of([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])

    def admit(self, db, cluster: str, candidate: str, policy: AdmissionPolicy) -> Decision:
        """Decide on `candidate` for the cluster by `policy`, inside the transaction `db` that holds
        the cluster's lock; log the decision and promote it if so decided."""
        row = db.execute("SELECT harness_id FROM incumbents WHERE cluster = ?", (cluster,)).fetchone()
        incumbent = row[0] if row else None
        if incumbent == candidate:
            return Decision(False, "candidate is already the incumbent")
        decision = policy.decide(self.cluster_stats(cluster, candidate, db),
                                 self.cluster_stats(cluster, incumbent, db) if incumbent else None)
        self._log_decision(db, cluster, candidate, incumbent, "promote" if decision.promote else "keep",
                           decision.reason)
        if decision.promote:
            db.execute("INSERT INTO incumbents VALUES (?, ?, ?) "
                       "ON CONFLICT (cluster) DO UPDATE "
                       "SET harness_id = excluded.harness_id, since = excluded.since",
                       (cluster, candidate, now()))
        return decision

    @staticmethod
    def _log_decision(db, cluster: str, candidate: str, previous: str | None, kind: str, reason: str) -> None:
        row = {"cluster": cluster, "candidate_id": candidate, "previous_id": previous, "kind": kind,
               "reason": reason, "decided_at": now()}
        db.execute(insert("decisions", row), tuple(row.values()))

    def incumbent(self, cluster: str) -> Incumbent | None:
        rows = self.store.query("SELECT harness_id, since FROM incumbents WHERE cluster = ?", (cluster,))
        if not rows:
            return None
        stats = self.cluster_stats(cluster, rows[0]["harness_id"])
        return Incumbent(cluster=cluster, harness_id=rows[0]["harness_id"], since=rows[0]["since"],
                         runs=stats.n if stats else 0, mean_reward=stats.mean_reward if stats else None,
                         mean_tokens=stats.mean_tokens if stats else None)

    def incumbents(self) -> list[Incumbent]:
        return [self.incumbent(r[0])
                for r in self.store.query("SELECT cluster FROM incumbents ORDER BY cluster")]

    def decisions(self, cluster: str | None = None) -> list[dict]:
        sql = "SELECT * FROM decisions" + (" WHERE cluster = ?" if cluster else "") + " ORDER BY id"
        return [dict(r) for r in self.store.query(sql, (cluster,) if cluster else ())]

    def retired(self, cluster: str) -> set[str]:
        """Harnesses a rollback removed from this cluster (unless they are its incumbent again)."""
        rows = self.store.query("SELECT previous_id FROM decisions WHERE cluster = ? AND kind = 'rollback'",
                                (cluster,))
        current = self.store.query("SELECT harness_id FROM incumbents WHERE cluster = ?", (cluster,))
        return {r[0] for r in rows} - {r[0] for r in current}

    def rollback(self, cluster: str) -> Rollback:
        """Restore the incumbent that the latest promotion (not yet rolled back) replaced."""
        with self.store.transaction() as db:
            self.lock_cluster(db, cluster)
            current = db.execute("SELECT harness_id FROM incumbents WHERE cluster = ?", (cluster,)).fetchone()
            if current is None:
                raise BankError(f"cluster {cluster!r} has no incumbent")
            promotion = db.execute("SELECT * FROM decisions "
                                   "WHERE cluster = ? AND kind = 'promote' AND candidate_id = ? "
                                   "ORDER BY id DESC "
                                   "LIMIT 1", (cluster, current[0])).fetchone()
            previous = promotion["previous_id"] if promotion else None
            if previous is None:
                raise BankError(f"cluster {cluster!r}: incumbent {current[0]} replaced nothing; nothing to "
                                "roll back to")
            db.execute("UPDATE incumbents SET harness_id = ?, since = ? WHERE cluster = ?",
                       (previous, now(), cluster))
            self._log_decision(db, cluster, previous, current[0], "rollback",
                               f"rollback: {current[0]} -> {previous}")
        return Rollback(cluster=cluster, restored=previous, replaced=current[0])
