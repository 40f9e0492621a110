"""Read-only views of what a bank has learned, for people: its clusters, the arms of one with their
posteriors, a harness found by name or id with its evidence, and a cluster's posteriors over time.

The posteriors are the router's (`Router.arms`), from each arm's record in the cluster with its record
elsewhere as the prior: what routing would weigh for a task with no near neighbours in other clusters
(a real task's nearest past tasks move its prior a little). Nothing here writes.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field

from harness_bank.adapters import AdapterRecord
from harness_bank.bank import HarnessBank
from harness_bank.ledger import Ledger
from harness_bank.pools import pool_of
from harness_bank.records import ArmEvidence, BankError, HarnessRecord
from harness_bank.retrieval import evidence_of
from harness_bank.router import Arm, Router, base_rate


@dataclass(frozen=True, kw_only=True)
class ArmView:
    harness_id: str
    name: str
    runs: int  # outcomes in the cluster
    mean_reward: float | None  # None: no outcome here yet
    mean_tokens: float | None  # None: unknown (some count unknown, or no outcome)
    posterior_mean: float
    low: float  # the posterior's central 95% interval
    high: float
    routes: dict[str, int] = field(default_factory=dict)  # the server's runs here, by route
    retired: bool = False  # rolled back in this cluster: routing leaves it out


@dataclass(frozen=True, kw_only=True)
class ClusterView:
    cluster: str
    outcomes: int
    tasks: int  # distinct tasks among them
    best: ArmView | None  # the arm with the best posterior mean
    incumbent_id: str | None


@dataclass(frozen=True, kw_only=True)
class HarnessView:
    harness: HarnessRecord
    lineage: list[HarnessRecord]  # the harness, then its ancestors
    evidence: list[dict]  # per cluster: runs, mean reward, mean tokens, incumbent there or not
    acceptance: list[dict]  # code written for a cluster: the attempt that made it, held-out rewards and cost


@dataclass(frozen=True, kw_only=True)
class AdapterView:
    adapter: AdapterRecord
    lineage: list[AdapterRecord]  # the adapter, then the adapters it followed
    evidence: list[dict]  # per harness that runs with it and cluster: runs, mean reward, mean tokens


class BankViews:
    def __init__(self, bank: HarnessBank, router: Router | None = None):
        self.bank = bank
        self.ledger = Ledger(bank.store)
        self.router = router or Router()

    def cluster_names(self) -> list[str]:
        """Every cluster with outcomes or server runs."""
        return self.ledger.cluster_names()

    def clusters(self) -> list[ClusterView]:
        """Every cluster with outcomes or server runs, most outcomes first."""
        counts = self.ledger.outcome_counts()
        views = []
        for cluster in self.cluster_names():
            arms = self.arms(cluster)  # best first
            incumbent = self.bank.incumbent(cluster)
            outcomes, tasks = counts.get(cluster, (0, 0))
            views.append(ClusterView(cluster=cluster, outcomes=outcomes, tasks=tasks, best=arms[0],
                                     incumbent_id=incumbent.harness_id if incumbent else None))
        return sorted(views, key=lambda v: (-v.outcomes, v.cluster))

    def arms(self, cluster: str) -> list[ArmView]:
        """The cluster's arms, best posterior first; BankError for a cluster the bank has never seen."""
        posteriors = self._posteriors(cluster)
        if not posteriors:
            raise BankError(f"no cluster {cluster!r} in this bank (see `jitagent bank clusters`)")
        routes = self.ledger.route_counts(cluster)
        retired = self.bank.retired(cluster)
        views = []
        for arm in sorted(posteriors, key=self.router.rank):
            e = arm.evidence
            low, high = arm.credible_interval()
            views.append(ArmView(harness_id=e.harness_id, name=e.name, runs=e.runs,
                                 mean_reward=e.reward_sum / e.runs if e.runs else None,
                                 mean_tokens=e.mean_tokens if e.runs else None,
                                 posterior_mean=round(arm.mean, 4), low=round(low, 4), high=round(high, 4),
                                 routes=routes.get(e.harness_id, {}), retired=e.harness_id in retired))
        return views

    def history(self, cluster: str, top: int = 8) -> dict[str, list[tuple[int, float, float, float]]]:
        """The posteriors of the cluster's `top` arms (most outcomes) after each of its outcomes, oldest
        first: per arm name, (outcome number, mean, low, high). Each arm's record elsewhere is taken as
        it is now."""
        final = {a.evidence.harness_id: a for a in self._posteriors(cluster)}
        rewards_in_order = self.ledger.rewards_in_order(cluster)
        counts: dict[str, int] = defaultdict(int)
        for harness_id, _ in rewards_in_order:
            counts[harness_id] += 1
        shown = sorted(counts, key=lambda h: -counts[h])[:top]
        runs: dict[str, int] = defaultdict(int)
        rewards: dict[str, float] = defaultdict(float)
        series: dict[str, list] = {final[h].evidence.name: [] for h in shown}
        for number, (harness_id, reward) in enumerate(rewards_in_order, 1):
            runs[harness_id] += 1
            rewards[harness_id] += reward
            for h in shown:
                e = final[h].evidence
                then = Arm(ArmEvidence(**{**e.__dict__, "runs": runs[h], "reward_sum": rewards[h]}),
                           final[h].prior_mean, final[h].prior_weight)
                low, high = then.credible_interval(draws=2_000)
                series[e.name].append((number, then.mean, low, high))
        return series

    def find(self, name_or_id: str) -> HarnessRecord:
        """A harness by id, else by name (the newest of that name); BankError when neither."""
        harness_id = self.ledger.harness_id(name_or_id)
        if harness_id is None:
            raise BankError(f"no harness with id or name {name_or_id!r} (see `jitagent bank ls`)")
        return self.bank.get(harness_id)

    def harness(self, name_or_id: str) -> HarnessView:
        harness = self.find(name_or_id)
        incumbent_of = {i.cluster for i in self.bank.incumbents() if i.harness_id == harness.id}
        evidence = [{"cluster": r["cluster"], "runs": r["n"], "mean_reward": r["reward"],
                     "mean_tokens": r["tokens"] if r["known"] == r["n"] else None,
                     "incumbent": r["cluster"] in incumbent_of}
                    for r in self.ledger.records_by_cluster(harness.id)]
        acceptance = [{"cluster": a["cluster"], "stage": a["stage"], "reason": a["reason"],
                       "heldout": a["detail"].get("evidence"),
                       "parent_heldout": a["detail"].get("parent_rewards"),
                       "prompt_tokens": a["prompt_tokens"], "completion_tokens": a["completion_tokens"],
                       "wall_s": a["wall_s"]}
                      for a in self.bank.code_attempts(harness_id=harness.id)]
        return HarnessView(harness=harness, lineage=self.bank.lineage(harness.id), evidence=evidence,
                           acceptance=acceptance)

    def adapter(self, ref: str) -> AdapterView | None:
        """An adapter by id or name, its lineage and the evidence of the harnesses that run with it; None
        when there is no such adapter."""
        adapter = self.bank.adapter(ref)
        if adapter is None:
            return None
        lineage = [adapter]
        while lineage[-1].parent_id is not None and len(lineage) < 100:
            lineage.append(self.bank.adapter(lineage[-1].parent_id))
        runs_with = [h for h, spec in self.ledger.harness_specs_by("adapter").items()
                     if json.loads(spec).get("adapter") == adapter.id]
        evidence = [{"harness_id": h, "name": self.bank.get(h).name, "cluster": r["cluster"], "runs": r["n"],
                     "mean_reward": r["reward"], "mean_tokens": r["tokens"] if r["known"] == r["n"] else None}
                    for h in runs_with for r in self.ledger.records_by_cluster(h)]
        return AdapterView(adapter=adapter, lineage=lineage, evidence=evidence)

    def _posteriors(self, cluster: str) -> list[Arm]:
        """The router's posterior of every harness with outcomes or server runs in the cluster."""
        here = self.ledger.records_in(cluster)
        ids = list(dict.fromkeys([*here, *self.ledger.harnesses_run_in(cluster)]))
        if not ids:
            return []
        there = self.ledger.records_elsewhere(cluster, ids, pool_of(cluster))
        harnesses = self.ledger.harness_rows(ids)
        evidence = [evidence_of(harnesses[h], here.get(h), there.get(h), [], 0.0) for h in ids]
        return self.router.arms(evidence, base_rate(evidence, []))
