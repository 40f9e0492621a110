"""The bank's facade: store harnesses and outcomes, retrieve, cluster, admit, roll back."""

from __future__ import annotations

import bisect
import json
import shutil
import statistics
import threading
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from harness_bank.admission import AdmissionPolicy, Decision, Stats
from harness_bank.embedder import DIM, Embedder, digest
from harness_bank.index import VectorIndex
from harness_bank.router import ArmEvidence
from harness_bank.store import describe, now, open_store

_SHARED_EMBEDDER: Embedder | None = None
_EMBEDDER_LOCK = threading.Lock()


def shared_embedder() -> Embedder:
    """One embedding model per process (loading it costs seconds)."""
    global _SHARED_EMBEDDER
    with _EMBEDDER_LOCK:
        if _SHARED_EMBEDDER is None:
            _SHARED_EMBEDDER = Embedder()
        return _SHARED_EMBEDDER


@dataclass
class Outcome:
    harness_id: str
    task_id: str
    task_text: str
    reward: float
    prompt_tokens: int | None
    completion_tokens: int | None
    wall_s: float
    verdict: str = ""
    cluster: str | None = None
    task_type: str | None = None
    tags: tuple[str, ...] = ()
    source: str = "run"  # run | feedback
    answer: str | None = None  # what the harness answered (None: no answer)
    trace: str = ""  # its last steps, trimmed: what reflective mutation reads
    delivery: str | None = None  # the queue delivery it came from: recorded once, however often redelivered
    run_id: str | None = None  # the server run it is the outcome of (see record_run): one outcome per run



@dataclass
class RunRecord:
    """What a server run was: an outcome reported later under its id lands on its harness, task and
    cluster. Its cost is what the server measured (None where it did not execute the harness)."""

    run_id: str
    harness_id: str
    task_id: str
    task_text: str
    cluster: str
    route: str
    task_type: str | None = None
    tags: tuple[str, ...] = ()
    answer: str | None = None
    trace: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    wall_s: float | None = None
    outcomes: int = 0  # recorded for it so far: 0 or 1

    def outcome(self, reward: float, verdict: str, prompt_tokens: int | None, completion_tokens: int | None,
                wall_s: float) -> Outcome:
        """Feedback on this run as the bank's evidence."""
        return Outcome(self.harness_id, self.task_id, self.task_text, reward, prompt_tokens,
                       completion_tokens, wall_s,
                       verdict, self.cluster, self.task_type, self.tags, "feedback", self.answer, self.trace,
                       run_id=self.run_id)


@dataclass
class Hit:
    harness_id: str
    name: str
    score: float
    similarity: float
    prior_reward: float | None
    prior_runs: int


@dataclass(frozen=True)
class HarnessRecord:
    """A stored harness: its spec as stored, and the envelope fields the bank keeps beside it."""

    id: str
    name: str
    description: str
    parent_id: str | None
    origin: str
    generator: str
    created_at: float
    spec: dict


@dataclass(frozen=True)
class Incumbent:
    """A cluster's incumbent and its record there."""

    cluster: str
    harness_id: str
    since: float
    runs: int
    mean_reward: float | None
    mean_tokens: float | None  # None: some token count unknown


@dataclass(frozen=True)
class Rollback:
    cluster: str
    restored: str  # the incumbent again
    replaced: str  # the one it replaces


class BankError(ValueError):
    """A request the bank cannot honour (unknown id, invalid outcome); nothing was written."""


class HarnessBank:
    """`HarnessBank(path)` opens (or creates) `path` (SQLite) and `path.faiss` beside it;
    `HarnessBank("postgresql://...")` opens a bank that replicas share, with this replica's faiss
    index at `index_path` (default: in memory, built on open).

    The vector log (table `vectors`) is appended in id order, one writer at a time, so an index
    follows it with a watermark: after each write here and, for a shared bank, on every other
    replica's NOTIFY (or every `poll_s` at the latest), it adds the vectors past its watermark."""

    NEIGHBOURS = 64          # experiences looked at per retrieval
    EXPERIENCE_MIN_SIM = 0.5  # below this a past task says nothing about this one
    CLUSTER_MIN_SIM = 0.6

    def __init__(self, path: str | Path, policy: AdmissionPolicy | None = None,
                 embedder: Embedder | None = None,
                 index_kind: str = "hnsw", index_path: Path | None = None, poll_s: float = 1.0):
        self.store = open_store(path)
        self.path = self.store.path  # None for a shared database
        self.location = describe(path)
        self.policy = policy or AdmissionPolicy()
        self._embedder = embedder
        if index_path is None and self.path is not None:
            index_path = self.path.with_suffix(self.path.suffix + ".faiss")
        self.index = VectorIndex(index_path, index_kind)
        self._cache_lock = threading.Lock()
        self._description_cache: tuple[list[str], dict[str, str], np.ndarray] | None = None
        self._synced = threading.Condition()
        self.watermark = 0  # the index holds every vector up to this id
        self.repaired_on_open = self._check_index()
        self._stop_watching = threading.Event()
        self._watcher = None
        if self.store.shared:
            self._watcher = threading.Thread(target=self.store.watch, name="bank-watch", daemon=True,
                                             args=(self.catch_up, self._stop_watching, poll_s))
            self._watcher.start()

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = shared_embedder()
        return self._embedder

    # --- index <-> database consistency --------------------------------------------------
    def _db_vectors(self) -> tuple[np.ndarray, np.ndarray]:
        rows = self.store.query("SELECT vid, vector FROM vectors ORDER BY vid")
        ids = np.array([r["vid"] for r in rows], dtype=np.int64)
        vectors = (np.stack([np.frombuffer(r["vector"], dtype=np.float32) for r in rows]) if rows
                   else np.zeros((0, DIM), np.float32))
        return ids, vectors

    def _check_index(self) -> bool:
        """Bring the index in line with the database on open: caught up when it holds a prefix of
        the vector log (saved before the last writes), rebuilt when it holds anything else (its
        newest vector differing says it is another database's). True when it changed."""
        db_ids = [r[0] for r in self.store.query("SELECT vid FROM vectors ORDER BY vid")]
        held = self.index.ids()
        top = max(held, default=0)
        if held != set(db_ids[:bisect.bisect_right(db_ids, top)]) or not self._holds_as_stored(top):
            self.reindex()
            return True
        with self._synced:
            self.watermark = top
        return self.catch_up() > 0

    def _holds_as_stored(self, vid: int) -> bool:
        """The index's vector `vid` is the database's (vid 0: there is none to compare)."""
        if not vid:
            return True
        rows = self.store.query("SELECT vector FROM vectors WHERE vid = ?", (vid,))
        return bool(rows) and np.array_equal(np.frombuffer(rows[0][0], dtype=np.float32),
                                             self.index.vector(vid))

    def reindex(self) -> int:
        with self._synced:
            ids, vectors = self._db_vectors()
            self.index.rebuild(ids, vectors)
            self.index.save()
            self.watermark = int(ids[-1]) if len(ids) else 0
            self._forget_descriptions()
            self._synced.notify_all()
        return len(ids)

    def catch_up(self) -> int:
        """Add the vectors committed past the watermark (this process's and any other's) to the
        index, in id order; the number added."""
        with self._synced:
            rows = self.store.query("SELECT vid, kind, vector FROM vectors WHERE vid > ? ORDER BY vid",
                                    (self.watermark,))
            if not rows:
                return 0
            self.index.add(np.array([r["vid"] for r in rows], dtype=np.int64),
                           np.stack([np.frombuffer(r["vector"], dtype=np.float32) for r in rows]))
            self.watermark = rows[-1]["vid"]
            if any(r["kind"] == "harness" for r in rows):
                self._forget_descriptions()
            self._synced.notify_all()
            return len(rows)

    def wait_synced(self, watermark: int, timeout: float) -> bool:
        """Block until the index holds every vector up to `watermark` (another replica's, read after
        its write); False when `timeout` seconds pass first."""
        with self._synced:
            return self._synced.wait_for(lambda: self.watermark >= watermark, timeout)

    def _append_vector(self, db, kind: str, ref: str, vector: np.ndarray) -> None:
        """One writer at a time appends, until its commit: ids then commit in increasing order, so
        a watermark never passes an id that is still to become visible."""
        self.store.lock(db, "vectors")
        db.execute("INSERT INTO vectors (kind, ref, vector) VALUES (?, ?, ?)", (kind, ref, vector.tobytes()))
        self.store.notify(db)

    def flush(self) -> None:
        if self.index.dirty:
            self.index.save()

    def close(self) -> None:
        self._stop_watching.set()
        if self._watcher is not None:
            self._watcher.join()
        self.flush()
        self.store.close()

    # --- harnesses -----------------------------------------------------------------------
    def add_harness(self, spec: dict) -> str:
        """Store a harness (a HarnessSpec as a dict, envelope included); idempotent by id."""
        envelope = spec.get("envelope") or {}
        harness_id = envelope.get("id")
        if not harness_id or not spec.get("name") or not spec.get("description"):
            raise BankError("a harness needs name, description and envelope.id")
        if self.store.query("SELECT 1 FROM harnesses WHERE id = ?", (harness_id,)):
            return harness_id
        parent = envelope.get("parent_id")
        if parent and not self.store.query("SELECT 1 FROM harnesses WHERE id = ?", (parent,)):
            raise BankError(f"parent harness {parent!r} is not in the bank")
        vector = self.embedder.embed_one(f"{spec['name']}: {spec['description']}")
        with self.store.transaction() as db:
            stored = db.execute(
                "INSERT INTO harnesses VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO NOTHING RETURNING id",
                (harness_id, spec["name"], spec["description"], json.dumps(spec), parent,
                 envelope.get("origin", "seed"), envelope.get("generator", "unknown"), now())).fetchone()
            if stored is not None:  # else another replica stored it since the check above
                self._append_vector(db, "harness", harness_id, vector)
        self.catch_up()
        return harness_id

    def get(self, harness_id: str) -> HarnessRecord:
        rows = self.store.query("SELECT * FROM harnesses WHERE id = ?", (harness_id,))
        if not rows:
            raise BankError(f"unknown harness id {harness_id!r}")
        return self._harness_record(rows[0])

    @staticmethod
    def _harness_record(row) -> HarnessRecord:
        return HarnessRecord(row["id"], row["name"], row["description"], row["parent_id"], row["origin"],
                             row["generator"], row["created_at"], json.loads(row["spec"]))

    def list_harnesses(self, origin: str | None = None, limit: int = 1000,
                       offset: int = 0) -> list[HarnessRecord]:
        sql = ("SELECT * FROM harnesses" + (" WHERE origin = ?" if origin else "")
               + " ORDER BY created_at, id LIMIT ? OFFSET ?")
        return [self._harness_record(r)
                for r in self.store.query(sql, ((origin,) if origin else ()) + (limit, offset))]

    def lineage(self, harness_id: str) -> list[HarnessRecord]:
        """The harness and its ancestors, newest first."""
        chain, current = [], harness_id
        while current:
            harness = self.get(current)
            chain.append(harness)
            current = harness.parent_id
        return chain

    def record_candidate(self, task_id: str, task_text: str, candidate: dict, generator: str) -> int:
        """Keep a synthesized candidate, valid or broken, with its history; a valid one's spec is
        stored as a harness (lineage: its parent reference)."""
        spec = candidate.get("spec")
        harness_id = self.add_harness(spec) if spec else None
        with self.store.transaction() as db:
            return db.execute(
                "INSERT INTO candidates (task_digest, task_id, harness_id, parent_id, origin, generator, "
                "valid, history, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                (digest(task_text), task_id, harness_id, candidate.get("parent_id"),
                 candidate.get("origin", "synthesized"),
                 generator, int(bool(candidate.get("valid"))), json.dumps(candidate.get("history", [])),
                 now())).fetchone()[0]

    def candidates(self, task_text: str | None = None) -> list[dict]:
        sql = "SELECT * FROM candidates" + (" WHERE task_digest = ?" if task_text else "") + " ORDER BY id"
        rows = self.store.query(sql, (digest(task_text),) if task_text else ())
        return [dict(r) | {"history": json.loads(r["history"])} for r in rows]

    # --- clusters ------------------------------------------------------------------------
    def cluster_for(self, task_text: str, task_type: str | None = None, tags: tuple[str, ...] = ()) -> str:
        """Rule: `type:T` when the task has a type; else `tags:a+b` from its tags; else the majority
        cluster of its nearest past tasks (similarity ≥ 0.6, up to 5); else a new `auto:` cluster."""
        if task_type:
            return f"type:{task_type}"
        if tags:
            return "tags:" + "+".join(sorted(tags))
        near = [ref for ref, sim in self._experiences(self.embedder.embed_one(task_text), 5)
                if sim >= self.CLUSTER_MIN_SIM]
        if near:
            rows = self.store.query(f"SELECT cluster FROM outcomes WHERE id IN ({','.join('?' * len(near))})",
                                    tuple(near))
            if rows:
                return Counter(r[0] for r in rows).most_common(1)[0][0]
        return f"auto:{digest(task_text)[:10]}"

    def _experiences(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(outcome id, similarity) of the nearest past tasks."""
        hits = self.index.search(vector, k + len(self._descriptions()[0]))
        if not hits:
            return []
        vids = [vid for vid, _ in hits]
        rows = self.store.query("SELECT vid, ref FROM vectors WHERE kind = 'experience' AND vid IN "
                                f"({','.join('?' * len(vids))})",
                                tuple(vids))
        refs = {r["vid"]: int(r["ref"]) for r in rows}
        return [(refs[vid], sim) for vid, sim in hits if vid in refs][:k]

    # --- retrieval -----------------------------------------------------------------------
    def search(self, task_text: str, k: int = 3) -> list[Hit]:
        """Top-k harnesses for a task, ranked by the reward they earned on the nearest past tasks
        (similarity-weighted, shrunk toward the neighbourhood's mean by one pseudo-outcome);
        similarity of their description to the task only breaks ties. A synthesized harness is
        offered only once it has earned reward somewhere."""
        query = self.embedder.embed_one(task_text)
        return self._rank(query, self._near(query), k)

    def _near(self, query: np.ndarray) -> list[tuple[object, float]]:
        """(outcome row, similarity) of the nearest past tasks that say something about this one."""
        near = [(oid, sim)
                for oid, sim in self._experiences(query, self.NEIGHBOURS) if sim >= self.EXPERIENCE_MIN_SIM]
        if not near:
            return []
        sims = dict(near)
        rows = self.store.query(f"SELECT id, harness_id, reward, cluster FROM outcomes WHERE id IN "
                                f"({','.join('?' * len(sims))})", tuple(sims))
        return [(r, sims[r["id"]]) for r in rows]

    def _rank(self, query: np.ndarray, near: list[tuple[object, float]], k: int,
              exclude: frozenset[str] = frozenset()) -> list[Hit]:
        ids, names, matrix = self._descriptions()
        if not ids:
            return []
        offered = {r[0] for r in self.store.query(
            "SELECT id FROM harnesses h WHERE origin = 'seed' "
            "OR EXISTS (SELECT 1 FROM outcomes o WHERE o.harness_id = h.id AND o.reward > 0)")}
        evidence: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for row, sim in near:
            evidence[row["harness_id"]].append((sim, row["reward"]))
        base = statistics.fmean(row["reward"] for row, _ in near) if near else 0.5
        hits = []
        for harness_id, sim in zip(ids, (matrix @ query).tolist()):
            if harness_id not in offered or harness_id in exclude:
                continue
            seen = evidence.get(harness_id, [])
            weight = sum(s for s, _ in seen)
            prior = sum(s * r for s, r in seen) / weight if seen else None
            earned = (weight * (prior or 0.0) + base) / (weight + 1)
            hits.append(Hit(harness_id, names[harness_id], round(earned, 4), round(sim, 4),
                            None if prior is None else round(prior, 4), len(seen)))
        hits.sort(key=lambda h: (-round(h.score, 2), -h.similarity, h.harness_id))
        return hits[:k]

    def arm_evidence(self, task_text: str, cluster: str, references: int) -> tuple[list[ArmEvidence], float]:
        """What a router needs for one task: every harness with outcomes in its cluster and the top
        references, each with its record here, on the nearest past tasks of other clusters and
        elsewhere; and the base reward (the cluster's mean, else the neighbourhood's, else 0.5).
        Harnesses rolled back in this cluster are left out: an operator retired them."""
        query = self.embedder.embed_one(task_text)
        near = self._near(query)
        retired = self.retired(cluster)
        hits = self._rank(query, near, references, exclude=frozenset(retired))
        local = {r["harness_id"]: r for r in self.store.query(
            "SELECT harness_id, COUNT(*) AS n, SUM(reward) AS rewards, AVG(prompt_tokens + "
            "completion_tokens) AS tokens, "
            "COUNT(prompt_tokens + completion_tokens) AS known FROM outcomes WHERE cluster = ? GROUP BY "
            "harness_id",
            (cluster,)) if r["harness_id"] not in retired}
        ids = list(dict.fromkeys([*local, *(h.harness_id for h in hits)]))
        if not ids:
            return [], 0.5
        marks = ",".join("?" * len(ids))
        elsewhere = {r["harness_id"]: r for r in self.store.query(
            "SELECT harness_id, COUNT(*) AS n, AVG(reward) AS reward, AVG(prompt_tokens + "
            "completion_tokens) AS tokens, "
            "COUNT(prompt_tokens + completion_tokens) AS known FROM outcomes WHERE cluster != ? AND "
            f"harness_id IN ({marks}) "
            f"GROUP BY harness_id", (cluster, *ids))}
        meta = {r["id"]: r
                for r in self.store.query(f"SELECT id, name, origin FROM harnesses WHERE id IN ({marks})",
                                                     tuple(ids))}
        near_out: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for row, sim in near:
            if row["cluster"] != cluster:
                near_out[row["harness_id"]].append((sim, row["reward"]))
        similarity = {h.harness_id: h.similarity for h in hits}
        arms = []
        for hid in ids:
            here, there, seen = local.get(hid), elsewhere.get(hid), near_out.get(hid, [])
            weight = sum(s for s, _ in seen)
            tokens = next((r["tokens"] for r in (here, there) if r is not None and r["n"]), None)
            known = next((r["known"] == r["n"] for r in (here, there) if r is not None and r["n"]), False)
            arms.append(ArmEvidence(
                hid, meta[hid]["name"], meta[hid]["origin"], here["n"] if here else 0,
                here["rewards"] if here else 0.0,
                weight, sum(s * r for s, r in seen) / weight if seen else None,
                there["n"] if there else 0, there["reward"] if there else None,
                tokens if known else None, similarity.get(hid, 0.0)))
        runs = sum(a.runs for a in arms)
        base = (sum(a.reward_sum for a in arms) / runs if runs
                else statistics.fmean(row["reward"] for row, _ in near) if near else 0.5)
        return arms, base

    def has_outcome(self, harness_id: str, task_id: str) -> bool:
        return bool(self.store.query("SELECT 1 FROM outcomes WHERE harness_id = ? AND task_id = ? LIMIT 1",
                                     (harness_id, task_id)))

    def outcome_summary(self, harness_id: str, task_ids: list[str]) -> tuple[int, float | None, float | None]:
        """Runs, mean reward and mean tokens (None when any count is unknown) of a harness on some tasks."""
        rows = self.store.query(
            f"SELECT reward, prompt_tokens + completion_tokens AS tokens FROM outcomes WHERE harness_id = ? "
            f"AND task_id IN ({','.join('?' * len(task_ids))})", (harness_id, *task_ids))
        if not rows:
            return 0, None, None
        tokens = [r["tokens"] for r in rows]
        return (len(rows), statistics.fmean(r["reward"] for r in rows),
                None if None in tokens else statistics.fmean(tokens))

    def backup(self, path: str | Path) -> None:
        """A consistent copy of the bank (database and index) at `path`, e.g. to start several
        experiments from one warmed bank. SQLite only: PostgreSQL has pg_dump."""
        if self.path is None:
            raise BankError(f"backup copies an SQLite bank; back up {self.location} with pg_dump")
        self.index.save()
        self.store.backup(path)
        shutil.copyfile(self.index.path, Path(str(path) + ".faiss"))

    def failures(self, cluster: str, harness_id: str, limit: int = 3) -> list[dict]:
        """The most recent outcomes of a harness in a cluster that fell short of full reward."""
        rows = self.store.query(
            "SELECT task_text, answer, verdict, trace, reward FROM outcomes WHERE cluster = ? AND harness_id "
            "= ? "
            "AND reward < 1 ORDER BY id DESC LIMIT ?", (cluster, harness_id, limit))
        return [dict(r) for r in rows]

    def retired(self, cluster: str) -> set[str]:
        """Harnesses a rollback removed from this cluster (unless they are its incumbent again)."""
        rows = self.store.query("SELECT previous_id FROM decisions WHERE cluster = ? AND kind = 'rollback'",
                                (cluster,))
        current = self.store.query("SELECT harness_id FROM incumbents WHERE cluster = ?", (cluster,))
        return {r[0] for r in rows} - {r[0] for r in current}

    def _forget_descriptions(self) -> None:
        with self._cache_lock:
            self._description_cache = None

    def _descriptions(self) -> tuple[list[str], dict[str, str], np.ndarray]:
        """Harness description vectors, cached until the index takes in a new harness."""
        with self._cache_lock:
            if self._description_cache is None:
                rows = self.store.query("SELECT v.ref, v.vector, h.name FROM vectors v JOIN harnesses h ON "
                                        "h.id = v.ref "
                                        "WHERE v.kind = 'harness' ORDER BY v.vid")
                matrix = (np.stack([np.frombuffer(r["vector"], dtype=np.float32) for r in rows]) if rows
                          else np.zeros((0, DIM), np.float32))
                self._description_cache = ([r["ref"] for r in rows], {r["ref"]: r["name"] for r in rows},
                                           matrix)
            return self._description_cache

    # --- outcomes, admission, incumbents -------------------------------------------------
    def record_outcome(self, outcome: Outcome, run: RunRecord | None = None) -> Decision:
        """Store an outcome (and its task as an experience), then run admission for its cluster.
        One transaction: a crash leaves either all of it or none of it. Admissions to one cluster
        take turns in every replica, so concurrent ones decide as they would have one after another.
        An outcome whose delivery or run is already recorded changes nothing. `run`: the run it is the
        outcome of, recorded in the same transaction (a database lost between the two would leave a run
        without its outcome, which a retry by run id takes for the whole of it)."""
        if not 0.0 <= outcome.reward <= 1.0:
            raise BankError(f"reward must be in [0, 1], got {outcome.reward}")
        if outcome.source not in ("run", "feedback"):
            raise BankError(f"source must be 'run' or 'feedback', got {outcome.source!r}")
        if not outcome.task_text.strip():
            raise BankError("task_text must not be empty")
        if not self.store.query("SELECT 1 FROM harnesses WHERE id = ?", (outcome.harness_id,)):
            raise BankError(f"unknown harness id {outcome.harness_id!r}")
        cluster = outcome.cluster or self.cluster_for(outcome.task_text, outcome.task_type, outcome.tags)
        vector = self.embedder.embed_one(outcome.task_text)
        with self.store.transaction() as db:
            if run is not None:
                self._insert_run(db, run)
            self._lock_cluster(db, cluster)
            stored = db.execute(
                "INSERT INTO outcomes (harness_id, task_id, task_digest, task_text, cluster, reward, "
                "prompt_tokens, "
                "completion_tokens, wall_s, verdict, source, created_at, answer, trace, delivery, run_id) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING RETURNING id",
                (outcome.harness_id, outcome.task_id, digest(outcome.task_text), outcome.task_text, cluster,
                 outcome.reward, outcome.prompt_tokens, outcome.completion_tokens, outcome.wall_s,
                 outcome.verdict,
                 outcome.source, now(), outcome.answer, outcome.trace[:4000], outcome.delivery,
                 outcome.run_id)).fetchone()
            if stored is None:
                what = f"run {outcome.run_id}" if outcome.run_id and db.execute(
                    "SELECT 1 FROM outcomes WHERE run_id = ?", (outcome.run_id,)).fetchone() \
                    else f"delivery {outcome.delivery}"
                return Decision(False, f"{what} was already recorded")
            decision = self._admit(db, cluster, outcome.harness_id)
            self._append_vector(db, "experience", str(stored[0]), vector)
        self.catch_up()
        return decision

    def record_run(self, run: RunRecord) -> None:
        """Keep what a run was, so that an outcome reported later by its id lands on exactly that
        run. The harness must be stored first."""
        with self.store.transaction() as db:
            self._insert_run(db, run)

    @staticmethod
    def _insert_run(db, run: RunRecord) -> None:
        db.execute("INSERT INTO runs (id, harness_id, task_id, task_text, task_type, tags, cluster, "
                   "route, answer, "
                   "trace, prompt_tokens, completion_tokens, wall_s, created_at) "
                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   (run.run_id, run.harness_id, run.task_id, run.task_text, run.task_type,
                    json.dumps(run.tags),
                    run.cluster, run.route, run.answer, run.trace[:4000], run.prompt_tokens,
                    run.completion_tokens, run.wall_s, now()))

    def run(self, run_id: str) -> RunRecord:
        rows = self.store.query("SELECT r.*, (SELECT COUNT(*) FROM outcomes o WHERE o.run_id = r.id) AS "
                                "outcomes "
                                "FROM runs r WHERE r.id = ?", (run_id,))
        if not rows:
            raise BankError(f"unknown run id {run_id!r}")
        r = rows[0]
        return RunRecord(r["id"], r["harness_id"], r["task_id"], r["task_text"], r["cluster"], r["route"],
                         r["task_type"], tuple(json.loads(r["tags"])), r["answer"], r["trace"],
                         r["prompt_tokens"], r["completion_tokens"], r["wall_s"], r["outcomes"])

    def _lock_cluster(self, db, cluster: str) -> None:
        self.store.lock(db, f"cluster:{cluster}")

    def cluster_stats(self, cluster: str, harness_id: str, db=None) -> Stats | None:
        """`db`: the connection inside a running transaction; otherwise a locked read."""
        # tokens summed in SQL, as everywhere in the bank: NULL (unknown) + n is NULL
        sql = ("SELECT reward, prompt_tokens + completion_tokens, wall_s FROM outcomes "
               "WHERE cluster = ? AND harness_id = ?")
        args = (cluster, harness_id)
        rows = db.execute(sql, args).fetchall() if db is not None else self.store.query(sql, args)
        if not rows:
            return None
        return Stats.of([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows])

    def _admit(self, db, cluster: str, candidate: str) -> Decision:
        row = db.execute("SELECT harness_id FROM incumbents WHERE cluster = ?", (cluster,)).fetchone()
        incumbent = row[0] if row else None
        if incumbent == candidate:
            return Decision(False, "candidate is already the incumbent")
        decision = self.policy.decide(self.cluster_stats(cluster, candidate, db),
                                      self.cluster_stats(cluster, incumbent, db) if incumbent else None)
        db.execute("INSERT INTO decisions (cluster, candidate_id, previous_id, kind, reason, decided_at) "
                   "VALUES (?, ?, ?, ?, ?, ?)",
                   (cluster, candidate, incumbent, "promote" if decision.promote else "keep", decision.reason,
                    now()))
        if decision.promote:
            db.execute("INSERT INTO incumbents VALUES (?, ?, ?) ON CONFLICT (cluster) DO UPDATE "
                       "SET harness_id = excluded.harness_id, since = excluded.since",
                       (cluster, candidate, now()))
        return decision

    def incumbent(self, cluster: str) -> Incumbent | None:
        rows = self.store.query("SELECT harness_id, since FROM incumbents WHERE cluster = ?", (cluster,))
        if not rows:
            return None
        stats = self.cluster_stats(cluster, rows[0]["harness_id"])
        return Incumbent(cluster, rows[0]["harness_id"], rows[0]["since"], stats.n if stats else 0,
                         stats.mean_reward if stats else None, stats.mean_tokens if stats else None)

    def incumbents(self) -> list[Incumbent]:
        return [self.incumbent(r[0])
                for r in self.store.query("SELECT cluster FROM incumbents ORDER BY cluster")]

    def decisions(self, cluster: str | None = None) -> list[dict]:
        sql = "SELECT * FROM decisions" + (" WHERE cluster = ?" if cluster else "") + " ORDER BY id"
        return [dict(r) for r in self.store.query(sql, (cluster,) if cluster else ())]

    def rollback(self, cluster: str) -> Rollback:
        """Restore the incumbent that the latest promotion (not yet rolled back) replaced."""
        with self.store.transaction() as db:
            self._lock_cluster(db, cluster)
            current = db.execute("SELECT harness_id FROM incumbents WHERE cluster = ?", (cluster,)).fetchone()
            if current is None:
                raise BankError(f"cluster {cluster!r} has no incumbent")
            promotion = db.execute(
                "SELECT * FROM decisions WHERE cluster = ? AND kind = 'promote' AND candidate_id = ? ORDER "
                "BY id DESC LIMIT 1",
                (cluster, current[0])).fetchone()
            previous = promotion["previous_id"] if promotion else None
            if previous is None:
                raise BankError(f"cluster {cluster!r}: incumbent {current[0]} replaced nothing; nothing to "
                                "roll back to")
            db.execute("UPDATE incumbents SET harness_id = ?, since = ? WHERE cluster = ?",
                       (previous, now(), cluster))
            db.execute("INSERT INTO decisions (cluster, candidate_id, previous_id, kind, reason, decided_at) "
                       "VALUES (?, ?, ?, 'rollback', ?, ?)",
                       (cluster, previous, current[0], f"rollback: {current[0]} -> {previous}", now()))
        return Rollback(cluster, previous, current[0])

    def stats(self) -> dict:
        count = lambda sql: self.store.query(sql)[0][0]  # noqa: E731
        return {"harnesses": count("SELECT COUNT(*) FROM harnesses"),
                "outcomes": count("SELECT COUNT(*) FROM outcomes"),
                "clusters": count("SELECT COUNT(DISTINCT cluster) FROM outcomes"),
                "incumbents": count("SELECT COUNT(*) FROM incumbents"),
                "candidates": count("SELECT COUNT(*) FROM candidates"), "index_size": self.index.size,
                "index_kind": self.index.kind, "db_bytes": self.store.size_bytes(),
                "schema_version": self.store.version}
