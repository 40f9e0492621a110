"""Retrieval and ranking: the harnesses for a task, and the evidence a router weighs them by.

It only reads: the nearest past tasks (experiences) from the faiss index, their outcomes from the
store, each harness's record in a cluster and elsewhere from the ledger (ledger.py), and the harnesses'
description vectors (cached until the index takes in a new harness). It gathers facts; the arithmetic on
them (near-task records, base rates, shrinkage) is the router's.
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict

import numpy as np

from harness_bank.embedder import digest
from harness_bank.index import VectorIndex, as_matrix
from harness_bank.ledger import Ledger
from harness_bank.pools import SEED, earned, in_pool, pool_of
from harness_bank.records import ArmEvidence, Hit, Solution
from harness_bank.router import UNKNOWN_BASE, base_rate, near_record, neighbourhood_base, shrunk
from harness_bank.store import Store, placeholders

Near = list[tuple[object, float]]  # (outcome row, similarity) of the nearest past tasks


class Retrieval:
    """Reads for one task, given as its embedding (`query`); the bank's facade embeds the text."""

    NEIGHBOURS = 64          # experiences looked at per retrieval
    EXPERIENCE_MIN_SIM = 0.5  # below this a past task says nothing about this one
    POOL_WIDENING = 8  # a pool's task looks at this many times the neighbours, and keeps its pool's nearest

    def __init__(self, store: Store, index: VectorIndex):
        self.store = store
        self.ledger = Ledger(store)
        self.index = index
        self._cache_lock = threading.Lock()
        self._description_cache: tuple[list[str], dict[str, str], np.ndarray] | None = None

    def experiences(self, vector: np.ndarray, k: int) -> list[tuple[int, float]]:
        """(outcome id, similarity) of the nearest past tasks."""
        hits = self.index.search(vector, k + len(self._descriptions()[0]))
        if not hits:
            return []
        vids = [vid for vid, _ in hits]
        rows = self.store.query("SELECT vid, ref FROM vectors "
                                f"WHERE kind = 'experience' AND vid IN ({placeholders(vids)})", tuple(vids))
        refs = {r["vid"]: int(r["ref"]) for r in rows}
        return [(refs[vid], sim) for vid, sim in hits if vid in refs][:k]

    def near_experiences(self, vector: np.ndarray, pool: str, min_sim: float) -> list[tuple[int, float]]:
        """(outcome id, similarity) of the nearest past tasks at least `min_sim` near; for a task of a pool
        more are looked at, since a big bank's nearest may all be other pools' (the caller keeps its own)."""
        looked_at = self.NEIGHBOURS * (self.POOL_WIDENING if pool else 1)
        return [(oid, sim) for oid, sim in self.experiences(vector, looked_at) if sim >= min_sim]

    def search(self, query: np.ndarray, k: int, pool: str = "") -> list[Hit]:
        """Top-k harnesses for a task of `pool`, ranked by the reward they earned on its nearest past tasks
        (similarity-weighted, shrunk toward the neighbourhood's mean by one pseudo-outcome);
        similarity of their description to the task only breaks ties. A synthesized harness is
        offered only once it has earned reward somewhere in the pool (harness_bank.pools)."""
        return self._rank(query, self._near(query, pool), k, pool=pool)

    def _near(self, query: np.ndarray, pool: str) -> Near:
        """(outcome row, similarity) of the nearest past tasks of `pool` that say something about this one."""
        near = self.near_experiences(query, pool, self.EXPERIENCE_MIN_SIM)
        if not near:
            return []
        sims = dict(near)
        mine, params = in_pool("cluster", pool)
        rows = self.store.query("SELECT id, harness_id, reward, cluster FROM outcomes "
                                f"WHERE id IN ({placeholders(sims)}) AND {mine}", (*sims, *params))
        return sorted(((r, sims[r["id"]]) for r in rows), key=lambda hit: -hit[1])[:self.NEIGHBOURS]

    def _rank(self, query: np.ndarray, near: Near, k: int, exclude: frozenset[str] = frozenset(),
              pool: str = "") -> list[Hit]:
        ids, names, matrix = self._descriptions()
        if not ids:
            return []
        gained, params = earned(pool)
        offered = {r[0] for r in self.store.query(f"SELECT id FROM harnesses h WHERE {SEED} OR {gained}",
                                                  params)}
        evidence: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for row, sim in near:
            evidence[row["harness_id"]].append((sim, row["reward"]))
        base = neighbourhood_base([row["reward"] for row, _ in near])
        hits = []
        for harness_id, sim in zip(ids, (matrix @ query).tolist()):
            if harness_id not in offered or harness_id in exclude:
                continue
            seen = evidence.get(harness_id, [])
            weight, prior = near_record(seen)
            score = shrunk(prior or 0.0, weight, base)
            hits.append(Hit(harness_id=harness_id, name=names[harness_id], score=round(score, 4),
                            similarity=round(sim, 4), prior_reward=None if prior is None else round(prior, 4),
                            prior_runs=len(seen)))
        hits.sort(key=lambda h: (-round(h.score, 2), -h.similarity, h.harness_id))
        return hits[:k]

    def arm_evidence(self, query: np.ndarray, cluster: str, references: int, retired: set[str],
                     include: tuple[str, ...] = ()) -> tuple[list[ArmEvidence], float]:
        """What a router needs for one task: every harness with outcomes in its cluster, the top
        `references` and those of `include` the bank holds, each with its record here, on the nearest past
        tasks of other clusters and elsewhere in its pool; and the task's base rate. The `retired`
        harnesses (rolled back in the cluster, or left out by the caller) are not arms."""
        pool = pool_of(cluster)
        near = self._near(query, pool)
        hits = self._rank(query, near, references, exclude=frozenset(retired), pool=pool)
        here = {h: r for h, r in self.ledger.records_in(cluster).items() if h not in retired}
        ids = list(dict.fromkeys([*here, *(h.harness_id for h in hits),
                                  *(i for i in include if i not in retired)]))
        harnesses = self.ledger.harness_rows(ids) if ids else {}
        if not (ids := [i for i in ids if i in harnesses]):
            return [], UNKNOWN_BASE
        there = self.ledger.records_elsewhere(cluster, ids, pool)
        seen: dict[str, list[tuple[float, float]]] = defaultdict(list)
        for row, sim in near:
            if row["cluster"] != cluster:
                seen[row["harness_id"]].append((sim, row["reward"]))
        similarity = {h.harness_id: h.similarity for h in hits}
        arms = [evidence_of(harnesses[hid], here.get(hid), there.get(hid), seen.get(hid, []),
                            similarity.get(hid, 0.0)) for hid in ids]
        return arms, base_rate(arms, [row["reward"] for row, _ in near])

    def failures(self, cluster: str, harness_id: str, limit: int, besides: str) -> list[dict]:
        """The most recent outcomes of a harness in a cluster that fell short of full reward, but those of a
        task with the text `besides` (a verdict such as "expected 7" would hand a task its own answer). A
        reported outcome's verdict is the reporter's free text: it is read as what it is, a reward, and
        never quoted — it would go into a meta-model's prompt (issue 45)."""
        sql = ("SELECT task_text, answer, verdict, trace, reward, source FROM outcomes WHERE cluster = ? AND "
               "harness_id = ? AND reward < 1 AND task_digest NOT IN (?, ?) ORDER BY id DESC LIMIT ?")
        texts = (digest(besides), digest(besides.strip()))
        found = [dict(r) for r in self.store.query(sql, (cluster, harness_id, *texts, limit))]
        for failure in found:
            if failure.pop("source") != "run":
                failure["verdict"] = f"reported by a client: reward {failure['reward']:g}"
        return found

    def solutions(self, cluster: str | None, min_reward: float, limit: int | None,
                  pool: str = "") -> list[Solution]:
        """The `limit` (None: all) most recent outcomes of `cluster` (None: every cluster of `pool`, every
        cluster for no pool) with reward ≥ `min_reward` whose run left its turns, each with its task's
        experience vector (the one the index holds), newest first. Only verified runs and reports have
        outcomes, so nothing unverified is among them."""
        mine, params = in_pool("o.cluster", pool)
        where = f"o.reward >= ? AND o.solution IS NOT NULL AND {mine}" \
            + ("" if cluster is None else " AND o.cluster = ?")
        params = (min_reward, *params) + (() if cluster is None else (cluster,))
        rows = self.store.query(
            "SELECT o.id, o.run_id, o.harness_id, o.cluster, o.task_id, o.task_text, o.solution, o.reward, "
            "o.verdict, o.evidence, o.created_at, v.vector "
            "FROM outcomes o JOIN vectors v ON v.kind = 'experience' AND v.ref = CAST(o.id AS TEXT) "
            f"WHERE {where} ORDER BY o.id DESC" + ("" if limit is None else " LIMIT ?"),
            params + (() if limit is None else (limit,)))
        return [Solution(outcome_id=r["id"], run_id=r["run_id"], harness_id=r["harness_id"],
                         cluster=r["cluster"], task_id=r["task_id"], task_text=r["task_text"],
                         turns=json.loads(r["solution"]), reward=r["reward"], verdict=r["verdict"],
                         evidence=r["evidence"], vector=np.frombuffer(r["vector"], dtype=np.float32),
                         created_at=r["created_at"]) for r in rows]

    def forget_descriptions(self) -> None:
        with self._cache_lock:
            self._description_cache = None

    def _descriptions(self) -> tuple[list[str], dict[str, str], np.ndarray]:
        """Harness description vectors, cached until the index takes in a new harness."""
        with self._cache_lock:
            if self._description_cache is None:
                rows = self.store.query("SELECT v.ref, v.vector, h.name "
                                        "FROM vectors v JOIN harnesses h ON h.id = v.ref "
                                        "WHERE v.kind = 'harness' "
                                        "ORDER BY v.vid")
                self._description_cache = ([r["ref"] for r in rows], {r["ref"]: r["name"] for r in rows},
                                           as_matrix([r["vector"] for r in rows]))
            return self._description_cache


def evidence_of(harness, here, there, seen: list[tuple[float, float]], similarity: float) -> ArmEvidence:
    """One arm's evidence from its harness row, its record in the cluster (`here`) and outside it
    (`there`), rows or None, and its (similarity, reward) on the nearest past tasks of other clusters.
    Its mean tokens come from the first of its records with runs, unless some count there is unknown."""
    weight, mean = near_record(seen)
    records = [r for r in (here, there) if r is not None and r["n"]]
    tokens = records[0]["tokens"] if records and records[0]["known"] == records[0]["n"] else None
    return ArmEvidence(harness_id=harness["id"], name=harness["name"], origin=harness["origin"],
                       runs=here["n"] if here else 0, reward_sum=here["rewards"] if here else 0.0,
                       near_weight=weight, near_reward=mean, global_runs=there["n"] if there else 0,
                       global_reward=there["reward"] if there else None, mean_tokens=tokens,
                       similarity=similarity)
