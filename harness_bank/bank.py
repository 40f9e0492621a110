"""The bank's facade: store harnesses, candidates, runs and outcomes; cluster; admit; roll back.

It writes the records to the store (store.py opens one: SQLite or PostgreSQL) and hands the rest to
its parts: `IndexSync` (index_sync.py) keeps the faiss index in step with the vector log, `Retrieval`
(retrieval.py) finds and ranks harnesses and gathers the router's evidence, `Incumbency`
(incumbency.py) admits by the `AdmissionPolicy` (admission.py), logs decisions and rolls back, and
`Workshop` (workshop.py) keeps each cluster's labelled tasks and the attempts to write code for it,
reached through the calls the facade inherits from `WorkshopFacade`; `Adapters` (adapters.py) keeps the
solver's trained adapters, reached through `AdapterFacade`'s; `PracticeLog` (practice.py) keeps the tries
made on failed tasks, through `PracticeFacade`'s; `Catalog` (pools.py) reads the harnesses a pool may read.
"""

from __future__ import annotations

import json
import shutil
import statistics
from collections import Counter
from pathlib import Path

from harness_bank.adapters import AdapterFacade, Adapters
from harness_bank.admission import AdmissionPolicy, Decision, Stats
from harness_bank.embedder import Embedder, digest, shared_embedder
from harness_bank.incumbency import Incumbency
from harness_bank.index import VectorIndex
from harness_bank.index_sync import IndexSync
from harness_bank.pools import Catalog, pool_of
from harness_bank.pools import prefix as pool_prefix
from harness_bank.practice import PracticeFacade, PracticeLog
from harness_bank.records import (
    ArmEvidence,
    BankError,
    HarnessRecord,
    Hit,
    Incumbent,
    Outcome,
    Rollback,
    RunRecord,
    Solution,
)
from harness_bank.retrieval import Retrieval
from harness_bank.store import TOKENS, describe, insert, now, placeholders
from harness_bank.store_factory import open_store
from harness_bank.workshop import Workshop, WorkshopFacade


class HarnessBank(WorkshopFacade, AdapterFacade, PracticeFacade):
    """`HarnessBank(path)` opens (or creates) `path` (SQLite) and `path.faiss` beside it;
    `HarnessBank("postgresql://...")` opens a bank that replicas share, with this replica's faiss
    index at `index_path` (default: in memory, built on open). The index follows the database's
    vector log, other replicas' writes included (index_sync.py)."""

    CLUSTER_MIN_SIM = 0.6  # a past task at least this near lends a task its cluster

    def __init__(self, path: str | Path, policy: AdmissionPolicy | None = None,
                 embedder: Embedder | None = None, index_kind: str = "hnsw", index_path: Path | None = None,
                 poll_s: float = 1.0):
        self.store = open_store(path)
        self.path = self.store.path  # None for a shared database
        self.location = describe(path)
        self.policy = policy or AdmissionPolicy()
        self._embedder = embedder
        if index_path is None and self.path is not None:
            index_path = self.path.with_suffix(self.path.suffix + ".faiss")
        self.index = VectorIndex(index_path, index_kind)
        self.retrieval = Retrieval(self.store, self.index)
        self.sync = IndexSync(self.store, self.index, self.retrieval.forget_descriptions, poll_s)
        self.incumbency = Incumbency(self.store)
        self.workshop = Workshop(self.store)
        self.adapters = Adapters(self.store)
        self.practice = PracticeLog(self.store)
        self.catalog = Catalog(self.store)

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = shared_embedder()
        return self._embedder

    # --- the index, following the database -----------------------------------------------
    @property
    def watermark(self) -> int:
        """The index holds every vector up to this id."""
        return self.sync.watermark

    @property
    def repaired_on_open(self) -> bool:
        return self.sync.repaired_on_open

    def reindex(self) -> int:
        return self.sync.reindex()

    def catch_up(self) -> int:
        return self.sync.catch_up()

    def wait_synced(self, watermark: int, timeout: float) -> bool:
        return self.sync.wait_synced(watermark, timeout)

    def flush(self) -> None:
        self.sync.flush()

    def close(self) -> None:
        self.sync.close()
        self.store.close()

    # --- harnesses and candidates --------------------------------------------------------
    def add_harness(self, spec: dict) -> str:
        """Store a harness (a HarnessSpec as a dict, envelope included); idempotent by id."""
        envelope = spec.get("envelope") or {}
        harness_id = envelope.get("id")
        if not harness_id or not spec.get("name") or not spec.get("description"):
            raise BankError("a harness needs name, description and envelope.id")
        if self._has_harness(harness_id):
            return harness_id
        parent = envelope.get("parent_id")
        if parent and not self._has_harness(parent):
            raise BankError(f"parent harness {parent!r} is not in the bank")
        vector = self.embedder.embed_one(f"{spec['name']}: {spec['description']}")
        with self.store.transaction() as db:
            stored = db.execute(
                "INSERT INTO harnesses VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO NOTHING RETURNING id",
                (harness_id, spec["name"], spec["description"], json.dumps(spec), parent,
                 envelope.get("origin", "seed"), envelope.get("generator", "unknown"), now())).fetchone()
            if stored is not None:  # else another replica stored it since the check above
                self.sync.append_vector(db, "harness", harness_id, vector)
        self.catch_up()
        return harness_id

    def _has_harness(self, harness_id: str) -> bool:
        return bool(self.store.query("SELECT 1 FROM harnesses WHERE id = ?", (harness_id,)))

    def get(self, harness_id: str, pool: str = "") -> HarnessRecord:
        """The harness (BankError for one not here), where `pool` may read it (harness_bank.pools)."""
        return self.catalog.get(harness_id, pool)

    def list_harnesses(self, origin: str | None = None, limit: int = 1000, offset: int = 0,
                       pool: str = "") -> list[HarnessRecord]:
        return self.catalog.page(origin, limit, offset, pool)

    def lineage(self, harness_id: str, pool: str = "") -> list[HarnessRecord]:
        """The harness and its ancestors, newest first."""
        return self.catalog.lineage(harness_id, pool)

    def record_candidate(self, task_id: str, task_text: str, candidate: dict, generator: str) -> int:
        """Keep a synthesized candidate, valid or broken, with its history; a valid one's spec is
        stored as a harness (lineage: its parent reference)."""
        spec = candidate.get("spec")
        harness_id = self.add_harness(spec) if spec else None
        with self.store.transaction() as db:
            row = {"task_digest": digest(task_text), "task_id": task_id, "harness_id": harness_id,
                   "parent_id": candidate.get("parent_id"), "origin": candidate.get("origin", "synthesized"),
                   "generator": generator, "valid": int(bool(candidate.get("valid"))),
                   "history": json.dumps(candidate.get("history", [])), "created_at": now()}
            return db.execute(insert("candidates", row) + " RETURNING id", tuple(row.values())).fetchone()[0]

    def candidates(self, task_text: str | None = None) -> list[dict]:
        sql = "SELECT * FROM candidates" + (" WHERE task_digest = ?" if task_text else "") + " ORDER BY id"
        rows = self.store.query(sql, (digest(task_text),) if task_text else ())
        return [dict(r) | {"history": json.loads(r["history"])} for r in rows]

    # --- clusters and retrieval ----------------------------------------------------------
    def cluster_for(self, task_text: str, task_type: str | None = None, tags: tuple[str, ...] = (),
                    pool: str = "") -> str:
        """`type:T` for a typed task; else `tags:a+b`; else the majority cluster of its nearest past tasks
        (similarity ≥ 0.6, up to 5, of its own pool); else a new `auto:` one. In a `pool` (a tenant's memory,
        or one tenants share) every cluster is the pool's, `POOL/type:T`; an untyped task joins only its
        pool's, and one of no pool only those of none."""
        prefix = pool_prefix(pool)
        if task_type:
            return f"{prefix}type:{task_type}"
        if tags:
            return prefix + "tags:" + "+".join(sorted(tags))
        vector = self.embedder.embed_one(task_text)
        near = [ref for ref, _ in self.retrieval.near_experiences(vector, pool, self.CLUSTER_MIN_SIM)]
        if near:
            rows = self.store.query(f"SELECT id, cluster FROM outcomes WHERE id IN ({placeholders(near)})",
                                    tuple(near))
            cluster_of = {r[0]: r[1] for r in rows}
            clusters = [cluster_of[i] for i in near if i in cluster_of and pool_of(cluster_of[i]) == pool]
            if clusters := clusters[:5]:
                return Counter(clusters).most_common(1)[0][0]
        return f"{prefix}auto:{digest(task_text)[:10]}"

    def search(self, task_text: str, k: int = 3, pool: str = "") -> list[Hit]:
        """Top-k harnesses for a task of `pool` (see Retrieval.search)."""
        return self.retrieval.search(self.embedder.embed_one(task_text), k, pool)

    def arm_evidence(self, task_text: str, cluster: str, references: int, include: tuple[str, ...] = (),
                     exclude: tuple[str, ...] = ()) -> tuple[list[ArmEvidence], float]:
        """What a router needs for a task (Retrieval.arm_evidence): never `exclude` nor a rolled-back arm."""
        return self.retrieval.arm_evidence(self.embedder.embed_one(task_text), cluster, references,
                                           self.retired(cluster) | set(exclude), include)

    # --- outcomes and runs ---------------------------------------------------------------
    def record_outcome(self, outcome: Outcome, run: RunRecord | None = None) -> Decision:
        """Store an outcome (and its task as an experience), then run admission for its cluster.
        One transaction: a crash leaves either all of it or none of it. Admissions to one cluster
        take turns in every replica, so concurrent ones decide as they would have one after another.
        An outcome whose delivery or run is already recorded changes nothing. `run`: the run it is the
        outcome of, recorded in the same transaction (a database lost between the two would leave a run
        without its outcome, which a retry by run id takes for the whole of it)."""
        self._validate(outcome)
        cluster = outcome.cluster or self.cluster_for(outcome.task_text, outcome.task_type, outcome.tags)
        vector = self.embedder.embed_one(outcome.task_text)
        with self.store.transaction() as db:
            if run is not None:
                _insert_run(db, run)
            self.incumbency.lock_cluster(db, cluster)
            row = {"harness_id": outcome.harness_id, "task_id": outcome.task_id,
                   "task_digest": digest(outcome.task_text), "task_text": outcome.task_text,
                   "cluster": cluster, "reward": outcome.reward, "prompt_tokens": outcome.prompt_tokens,
                   "completion_tokens": outcome.completion_tokens, "wall_s": outcome.wall_s,
                   "verdict": outcome.verdict, "source": outcome.source, "created_at": now(),
                   "answer": outcome.answer, "trace": outcome.trace[:4000], "delivery": outcome.delivery,
                   "run_id": outcome.run_id, "solution": _json_or_none(outcome.solution),
                   "evidence": outcome.evidence}
            stored = db.execute(insert("outcomes", row) + " ON CONFLICT DO NOTHING RETURNING id",
                                tuple(row.values())).fetchone()
            if stored is None:
                what = f"run {outcome.run_id}" if outcome.run_id and db.execute(
                    "SELECT 1 FROM outcomes WHERE run_id = ?", (outcome.run_id,)).fetchone() \
                    else f"delivery {outcome.delivery}"
                return Decision(False, f"{what} was already recorded")
            decision = self.incumbency.admit(db, cluster, outcome.harness_id, self.policy)
            self.sync.append_vector(db, "experience", str(stored[0]), vector)
        self.catch_up()
        return decision

    def _validate(self, outcome: Outcome) -> None:
        if not 0.0 <= outcome.reward <= 1.0:
            raise BankError(f"reward must be in [0, 1], got {outcome.reward}")
        if outcome.source not in ("run", "feedback"):
            raise BankError(f"source must be 'run' or 'feedback', got {outcome.source!r}")
        if not outcome.task_text.strip():
            raise BankError("task_text must not be empty")
        if not self._has_harness(outcome.harness_id):
            raise BankError(f"unknown harness id {outcome.harness_id!r}")

    def record_run(self, run: RunRecord) -> None:
        """Keep what a run was, so that an outcome reported later by its id lands on exactly that
        run. The harness must be stored first."""
        with self.store.transaction() as db:
            _insert_run(db, run)

    def run(self, run_id: str) -> RunRecord:
        rows = self.store.query(
            "SELECT r.*, (SELECT COUNT(*) FROM outcomes o WHERE o.run_id = r.id) AS outcomes "
            "FROM runs r "
            "WHERE r.id = ?", (run_id,))
        if not rows:
            raise BankError(f"unknown run id {run_id!r}")
        r = rows[0]
        return RunRecord(run_id=r["id"], harness_id=r["harness_id"], task_id=r["task_id"],
                         task_text=r["task_text"], cluster=r["cluster"], route=r["route"],
                         task_type=r["task_type"], tags=tuple(json.loads(r["tags"])), answer=r["answer"],
                         trace=r["trace"], prompt_tokens=r["prompt_tokens"],
                         completion_tokens=r["completion_tokens"], wall_s=r["wall_s"],
                         solution=json.loads(r["solution"]) if r["solution"] else None,
                         outcomes=r["outcomes"])

    def has_outcome(self, harness_id: str, task_id: str) -> bool:
        return bool(self.store.query("SELECT 1 FROM outcomes WHERE harness_id = ? AND task_id = ? LIMIT 1",
                                     (harness_id, task_id)))

    def forget_outcomes(self, harness_id: str, task_id: str) -> int:
        """Remove a harness's outcomes on a task that came from no server run or queue delivery (`bank
        warm`'s), so that a unit run again replaces them; how many went. Their experience vectors stay
        in the log (append-only): retrieval skips what no longer has an outcome."""
        with self.store.transaction() as db:
            return len(db.execute("DELETE FROM outcomes "
                                  "WHERE harness_id = ? AND task_id = ? "
                                  "AND run_id IS NULL AND delivery IS NULL "
                                  "RETURNING id", (harness_id, task_id)).fetchall())

    def outcome_summary(self, harness_id: str, task_ids: list[str]) -> tuple[int, float | None, float | None]:
        """Runs, mean reward and mean tokens (None when any count is unknown) of a harness on some tasks."""
        rows = self.store.query(f"SELECT reward, {TOKENS} AS tokens "
                                "FROM outcomes "
                                f"WHERE harness_id = ? AND task_id IN ({placeholders(task_ids)})",
                                (harness_id, *task_ids))
        if not rows:
            return 0, None, None
        tokens = [r["tokens"] for r in rows]
        return (len(rows), statistics.fmean(r["reward"] for r in rows),
                None if None in tokens else statistics.fmean(tokens))

    def tasks_seen(self, cluster: str) -> int:
        """Tasks (by text) with outcomes in the cluster: the horizon its exploring must pay back over."""
        return self.store.query("SELECT COUNT(DISTINCT task_digest) FROM outcomes WHERE cluster = ?",
                                (cluster,))[0][0]

    def solutions(self, cluster: str | None, min_reward: float, limit: int | None,
                  pool: str = "") -> list[Solution]:
        """Runs of a cluster (None: all of `pool`'s) that left their turns, reward ≥ `min_reward`, and the
        practice's kept tries (practice.py), newest first."""
        found = (self.retrieval.solutions(cluster, min_reward, limit, pool)
                 + self.practice.solutions(cluster, min_reward, limit, pool))
        found.sort(key=lambda s: s.created_at, reverse=True)
        return found if limit is None else found[:limit]

    def failures(self, cluster: str, harness_id: str, limit: int = 3, besides: str = "") -> list[dict]:
        """A harness's recent shortfalls in a cluster, for a meta-model's prompt (see Retrieval.failures)."""
        return self.retrieval.failures(cluster, harness_id, limit, besides)

    # --- admission, incumbents, rollback ---------------------------------------------------
    def cluster_stats(self, cluster: str, harness_id: str, db=None) -> Stats | None:
        """`db`: the connection inside a running transaction; otherwise a locked read."""
        return self.incumbency.cluster_stats(cluster, harness_id, db)

    def incumbent(self, cluster: str) -> Incumbent | None:
        return self.incumbency.incumbent(cluster)

    def incumbents(self) -> list[Incumbent]:
        return self.incumbency.incumbents()

    def decisions(self, cluster: str | None = None) -> list[dict]:
        return self.incumbency.decisions(cluster)

    def retired(self, cluster: str) -> set[str]:
        """Harnesses a rollback removed from this cluster (unless they are its incumbent again)."""
        return self.incumbency.retired(cluster)

    def rollback(self, cluster: str) -> Rollback:
        """Restore the incumbent that the latest promotion (not yet rolled back) replaced."""
        return self.incumbency.rollback(cluster)

    # --- backup and stats ----------------------------------------------------------------
    def backup(self, path: str | Path) -> None:
        """A consistent copy of the bank (database and index) at `path`, e.g. to start several
        experiments from one warmed bank. SQLite only: PostgreSQL has pg_dump."""
        if self.path is None:
            raise BankError(f"backup copies an SQLite bank; back up {self.location} with pg_dump")
        self.index.save()
        self.store.backup(path)
        shutil.copyfile(self.index.path, Path(str(path) + ".faiss"))

    def stats(self) -> dict:
        count = lambda sql: self.store.query(sql)[0][0]  # noqa: E731
        return {"harnesses": count("SELECT COUNT(*) FROM harnesses"),
                "outcomes": count("SELECT COUNT(*) FROM outcomes"),
                "clusters": count("SELECT COUNT(DISTINCT cluster) FROM outcomes"),
                "incumbents": count("SELECT COUNT(*) FROM incumbents"),
                "candidates": count("SELECT COUNT(*) FROM candidates"), "index_size": self.index.size,
                "index_kind": self.index.kind, "db_bytes": self.store.size_bytes(),
                "schema_version": self.store.version}


def _insert_run(db, run: RunRecord) -> None:
    row = {"id": run.run_id, "harness_id": run.harness_id, "task_id": run.task_id,
           "task_text": run.task_text, "task_type": run.task_type, "tags": json.dumps(run.tags),
           "cluster": run.cluster, "route": run.route, "answer": run.answer,
           "trace": run.trace[:4000], "prompt_tokens": run.prompt_tokens,
           "completion_tokens": run.completion_tokens, "wall_s": run.wall_s, "created_at": now(),
           "solution": _json_or_none(run.solution)}
    db.execute(insert("runs", row), tuple(row.values()))


def _json_or_none(value) -> str | None:
    return None if value is None else json.dumps(value)


def copy_bank(source: str | Path, target: str | Path) -> None:
    """A consistent copy of the SQLite bank at `source` (database and index) at `target`."""
    bank = HarnessBank(source)
    try:
        bank.backup(target)
    finally:
        bank.close()
