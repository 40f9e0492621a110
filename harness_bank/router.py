"""A bandit per task cluster: which harness runs is decided by measured reward, not by taste.

Arms are the harnesses with outcomes in the cluster plus the top retrieved references; one more
choice, "synthesize a new variant", has a share that decays with the cluster's evidence and never
reaches zero. Each arm's reward posterior is a Beta distribution:

    Beta(0.5 + prior_weight·prior_mean + Σ rewards,  0.5 + prior_weight·(1 − prior_mean) + Σ (1 − rewards))

where the prior comes from the harness's reward on the nearest past tasks outside the cluster
(kNN over experience vectors), shrunk toward its global record; a harness with no outcome anywhere
starts pessimistic (`unproven` × the base rate), so exploring it must be worth a task.

Tokens may have a price (`token_price`, reward per 1,000 tokens a task; 0 unless configured): an arm is
worth its reward less the price of its tokens where they are known (an arm that has never run is not
charged: its first run tells). So a dearer arm must earn its tokens, and where rewards tie — at 0 in a
cluster nothing solves, at 1 where everything does — the cheaper arm runs. Thompson sampling picks the
arm by its draw less its price; arms whose values lie within `tie_margin` of the best count as tied and
the one with fewer tokens wins. The route says why: `exploit` (the arm with the best value), `explore`
(another arm drawn by Thompson sampling) or `synthesized` (the share for new variants came up).

Exploration is spent only where the rest of the stream can pay it back. A cluster is expected to see
as many tasks again as it has seen (`horizon`, unless configured). Another arm drawn runs only if
some number of runs m of it (up to `lookahead`) pays for itself: what m runs can teach — over the
horizon left after them, the expected excess of its value after m more outcomes over the best arm's
value, (h − m) · E[max(μ_m − c − v_best, 0)] — at least covers what the m runs are expected to
lose, m · (v_best − (μ − c)), where c is the arm's price and v an arm's mean less its price; else the
best arm runs. Counting the runs it takes to learn (the knowledge gradient over m steps) is what keeps
an arm that only a lucky streak could lift above the best from being explored. A variant is written
only from a parent that has failed in the cluster (a mutation reads its failures; a parent that has not
failed there sits at the ceiling, with nothing to fix). A barren cluster — `barren_runs` runs that together
earned less than half a success — stops drawing among its arms and runs the cheapest that ran there: the
synthesis share goes on looking, and reward that adds up to half a success ends the rule.

All the arithmetic of that model is here: the similarity-weighted record on the nearest past tasks,
the base rate, the shrinkage, the posterior. The bank only gathers the facts (its retrieval ranks
with the same near-task record and shrinkage).
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from harness_bank.records import ArmEvidence, ArmSummary

# What ran for a task, in one vocabulary for the router, the pipeline, the wire and the bench: the router
# decides the first three ("synthesized": write a variant); routing (jitagent.solving.routing) turns its
# synthesis draw into "variant" where a mutation that costs no meta-model call is on offer, and "fallback" is
# the pipeline's when writing fails.
Route = Literal["exploit", "explore", "synthesized", "fallback", "variant"]
ROUTES: tuple[Route, ...] = ("exploit", "explore", "synthesized", "fallback", "variant")


class RouterConfig(BaseModel):
    references: int = Field(3, ge=1, le=13,
                            description="retrieved references offered as arms besides the cluster's")
    prior_weight: float = Field(2.0, gt=0,
                                description="pseudo-observations a prior from other tasks counts for")
    global_weight: float = Field(1.0, ge=0,
                                 description="pseudo-observations of the harness's record elsewhere")
    synth_start: float = Field(1.0, ge=0, le=1,
                               description="share of synthesis in a cluster with no evidence")
    synth_half_life: float = Field(2.0, gt=0,
                                   description="evidence (outcomes) at which that share has halved")
    synth_floor: float = Field(0.05, ge=0, le=1, description="the least share of synthesis "
                               "in a cluster whose best arm has failed there")
    tie_margin: float = Field(0.02, ge=0, le=1, description="draws this close are a tie: fewer tokens wins")
    unproven: float = Field(0.25, ge=0, le=1, description="the prior of an arm with no outcome anywhere, as "
                            "a share of the base rate: exploring it must be worth a task")
    horizon: float | None = Field(None, ge=0, allow_inf_nan=False, description="tasks a cluster is "
                                  "expected to see from this one on, this one included, over which "
                                  "exploring must pay back; None: as many as it has seen")
    lookahead: int = Field(32, ge=1, le=256, description="the most runs of an arm an exploration may take "
                           "to pay back")
    # 0 by default: at 0.1 a 600-task stream saved 1.4% of its tokens and lost 1.0 point (BENCHMARKS.md)
    token_price: float = Field(0.0, ge=0, le=10, allow_inf_nan=False, description="reward 1,000 tokens a "
                               "task are worth: an arm's value is its mean reward less this price of its "
                               "tokens (0: tokens only break ties)")
    barren_runs: int = Field(12, ge=0, le=10_000, description="runs in a cluster that together earned less "
                             "than half a success, after which drawing among its arms stops and the "
                             "cheapest runs (the synthesis share stays; half a success ends it); 0: never")


UNKNOWN_BASE = 0.5  # the base reward where nothing at all is known


def near_record(seen: list[tuple[float, float]]) -> tuple[float, float | None]:
    """A harness's record on the nearest past tasks, from its (similarity, reward) on each: the weight
    (the similarities summed) and the similarity-weighted mean reward (None: no such task)."""
    weight = sum(s for s, _ in seen)
    return weight, (sum(s * r for s, r in seen) / weight if seen else None)


def neighbourhood_base(rewards: list[float]) -> float:
    """The mean reward on the nearest past tasks (UNKNOWN_BASE without any)."""
    return statistics.fmean(rewards) if rewards else UNKNOWN_BASE


def base_rate(evidence: list[ArmEvidence], near_rewards: list[float]) -> float:
    """A task's base reward, the prior of a harness with no record at all: the mean reward of the arms
    in its cluster, else of its nearest past tasks, else UNKNOWN_BASE."""
    runs = sum(e.runs for e in evidence)
    return sum(e.reward_sum for e in evidence) / runs if runs else neighbourhood_base(near_rewards)


def shrunk(mean: float, weight: float, toward: float) -> float:
    """`mean`, observed with `weight`, shrunk toward `toward` by one pseudo-observation."""
    return (weight * mean + toward) / (weight + 1)


def lookahead_excess(alpha: float, beta: float, level: float, runs: int) -> float:
    """E[max(μ_runs − level, 0)]: what an arm's posterior mean after `runs` more outcomes, drawn from its
    Beta(alpha, beta) posterior (each a success with the arm's own chance: beta-binomial), may stand above
    `level`."""
    norm = math.lgamma(alpha) + math.lgamma(beta) - math.lgamma(alpha + beta)
    total = 0.0
    for wins in range(runs + 1):
        excess = (alpha + wins) / (alpha + beta + runs) - level
        if excess > 0:
            log_p = (math.lgamma(runs + 1) - math.lgamma(wins + 1) - math.lgamma(runs - wins + 1)
                     + math.lgamma(alpha + wins) + math.lgamma(beta + runs - wins)
                     - math.lgamma(alpha + beta + runs) - norm)
            total += math.exp(log_p) * excess
    return total


def pays_back(arm: Arm, best: Arm, horizon: float, lookahead: int, price: float = 0.0) -> bool:
    """Whether running `arm` instead of `best` is worth it over the `horizon` tasks from this one on: for
    some m ≤ `lookahead` runs of it (this task the first), what they may lift its value above the best
    arm's, over the tasks left after them, covers what they are expected to lose (`price`: of 1,000
    tokens, in reward)."""
    best_value, charge = best.value(price), arm.charge(price)
    loss = best_value - arm.value(price)
    if loss <= 0:
        return True
    return any((horizon - m) * lookahead_excess(arm.alpha, arm.beta, best_value + charge, m) >= m * loss
               for m in range(1, min(lookahead, math.ceil(horizon) - 1) + 1))


@dataclass(frozen=True)
class Arm:
    evidence: ArmEvidence
    prior_mean: float
    prior_weight: float

    @property
    def alpha(self) -> float:
        return 0.5 + self.prior_weight * self.prior_mean + self.evidence.reward_sum

    @property
    def beta(self) -> float:
        return 0.5 + self.prior_weight * (1 - self.prior_mean) + self.evidence.runs - self.evidence.reward_sum

    @property
    def mean(self) -> float:
        return self.alpha / (self.alpha + self.beta)

    def credible_interval(self, level: float = 0.95, draws: int = 20_000) -> tuple[float, float]:
        """The central `level` interval of the posterior, from seeded draws: the same record always
        shows the same interval."""
        sample = np.random.default_rng(0).beta(self.alpha, self.beta, draws)
        low, high = np.quantile(sample, [(1 - level) / 2, (1 + level) / 2])
        return float(low), float(high)

    def charge(self, price: float) -> float:
        """What its tokens cost at `price` a thousand, in reward (0 where they are not known yet)."""
        tokens = self.evidence.mean_tokens
        return 0.0 if tokens is None else price * tokens / 1000

    def value(self, price: float) -> float:
        return self.mean - self.charge(price)

    @property
    def tokens_key(self) -> float:
        return math.inf if self.evidence.mean_tokens is None else self.evidence.mean_tokens

    def summary(self) -> ArmSummary:
        e = self.evidence
        return ArmSummary(harness_id=e.harness_id, name=e.name, runs=e.runs, mean=round(self.mean, 4),
                          prior_mean=round(self.prior_mean, 4), prior_weight=round(self.prior_weight, 3),
                          mean_tokens=e.mean_tokens, similarity=e.similarity)


@dataclass
class RouteChoice:
    """Where a task goes, decided in one place: the arm to run, or a synthesis and what runs when it
    writes nothing valid (`best`: the fallback), or the best arm while code is written for the cluster."""

    route: Route
    arm: Arm | None  # the harness to run; for `synthesized`, the parent to mutate (None: a cold cluster)
    best: Arm | None         # the arm with the best posterior mean (the fallback when synthesis fails)
    arms: list[Arm] = field(default_factory=list)
    reason: str = ""
    write_code: bool = False  # the synthesis draw went to writing code for the cluster: `arm` runs meanwhile


# Whether a cluster is due for code written for it, given its arms: the arm to write on, and why.
CodeDue = Callable[[list[Arm]], tuple[Arm, str] | None]


class Router:
    def __init__(self, config: RouterConfig | None = None):
        self.config = config or RouterConfig()

    def arms(self, evidence: list[ArmEvidence], base: float) -> list[Arm]:
        """Posterior per arm. `base`: the task's base rate (see `base_rate`); a harness with no outcome
        anywhere starts at `unproven` × base, held with the full prior weight (a confident doubt)."""
        cfg = self.config
        arms = []
        for e in evidence:
            if not (e.runs or e.global_runs or e.near_weight):
                arms.append(Arm(e, base * cfg.unproven, cfg.prior_weight))
                continue
            anchor = base if e.global_reward is None else shrunk(e.global_reward, e.global_runs, base)
            near = min(e.near_weight, cfg.prior_weight)
            weights = near + cfg.global_weight
            prior = ((near * (e.near_reward or 0.0) + cfg.global_weight * anchor) / weights if weights
                     else base)
            arms.append(Arm(e, prior, max(min(weights, cfg.prior_weight), 1e-6)))
        return arms

    def synth_share(self, evidence: float) -> float:
        cfg = self.config
        return max(cfg.synth_floor, cfg.synth_start * cfg.synth_half_life / (cfg.synth_half_life + evidence))

    def choose(self, evidence: list[ArmEvidence], base: float, rng: random.Random,
               seen: int | None = None, code_due: CodeDue | None = None,
               first: frozenset[str] = frozenset()) -> RouteChoice:
        """`seen`: the tasks the cluster has seen, the horizon exploring must pay back over (unless the
        config sets one); None and no configured horizon: every draw stands. `code_due`: where the draw
        is for synthesis and the cluster's best arm plateaus, code is written instead (between tasks)
        while that arm runs. `first`: baselines, each run once in the cluster before anything else, so
        that what is written or drawn after has their record to beat (and a synthesis a parent to mutate)."""
        arms = self.arms(evidence, base)
        unmeasured = (a for a in arms if a.evidence.harness_id in first and not a.evidence.runs)
        if baseline := next(unmeasured, None):
            return RouteChoice("explore", baseline, min(arms, key=self.rank), arms,
                               f"{baseline.evidence.name}, a baseline, runs once before the cluster's draws")
        weight = sum(a.evidence.runs for a in arms) + sum(min(a.evidence.near_weight,
                                                              self.config.prior_weight)
                                                          for a in arms if a.evidence.runs == 0)
        share = self.synth_share(weight)
        best = min(arms, key=self.rank, default=None)
        # a mutation needs a parent that ran here and failed (its failures are the material); a cold cluster
        # has none and writes from references
        parent = min((a for a in arms if a.evidence.runs), key=self.rank, default=None)
        at_ceiling = parent is not None and parent.evidence.reward_sum >= parent.evidence.runs
        if best is None or (rng.random() < share and not at_ceiling):
            if code_due is not None and (due := code_due(arms)) is not None:
                runs, why = due
                return RouteChoice("exploit" if runs is best else "explore", runs, best, arms,
                                   f"{why}: code for the cluster is being written; {runs.evidence.name} "
                                   "runs meanwhile", write_code=True)
            return RouteChoice("synthesized", parent, best, arms,
                               f"synthesis share {share:.2f} at evidence {weight:.1f}")
        if (cheapest := self.barren(arms)) is not None:
            runs = sum(a.evidence.runs for a in arms)
            return RouteChoice("exploit", cheapest, best, arms, f"{cheapest.evidence.name}, the cheapest "
                               f"arm: a barren cluster (less than half a success in {runs} runs)")
        price = self.config.token_price
        draws = [(rng.betavariate(a.alpha, a.beta) - a.charge(price), a) for a in arms]
        top = max(d for d, _ in draws)
        tied = [a for d, a in draws if d >= top - self.config.tie_margin]
        arm = min(tied, key=lambda a: (a.tokens_key, -a.mean, a.evidence.harness_id))
        horizon = self.config.horizon if self.config.horizon is not None else seen
        if (arm is not best and horizon is not None
                and not pays_back(arm, best, horizon, self.config.lookahead, price)):
            return RouteChoice("exploit", best, best, arms,
                               f"{best.evidence.name} (posterior mean {best.mean:.2f}): exploring "
                               f"{arm.evidence.name} ({arm.mean:.2f}) would not pay back over {horizon:g} "
                               "tasks")
        route: Route = "exploit" if arm is best else "explore"
        return RouteChoice(route, arm, best, arms,
                           f"Thompson draw {top:.2f}: {arm.evidence.name} (posterior mean "
                                                   f"{arm.mean:.2f}, {arm.evidence.runs} run(s) here)")

    def barren(self, arms: list[Arm]) -> Arm | None:
        """The cheapest arm that ran here (of known tokens; None: no such arm) where the cluster is barren:
        `barren_runs` runs that together earned less than half a success. At 12, Jeffreys' one-sided 95%
        bound on the cluster's pooled success chance is below 0.15: the priors an arm brought from other
        clusters no longer say what it is worth here, and another draw only spends tokens. In a cluster this
        poor reward cannot rank its arms, so tokens do. New variants (the synthesis share) go on looking,
        and reward that adds up to half a success ends it."""
        runs = sum(a.evidence.runs for a in arms)
        if not self.config.barren_runs or runs < self.config.barren_runs \
                or sum(a.evidence.reward_sum for a in arms) >= 0.5:
            return None
        ran = [a for a in arms if a.evidence.runs and a.evidence.mean_tokens is not None]
        return min(ran, key=lambda a: (a.tokens_key, a.evidence.harness_id), default=None)

    def rank(self, arm: Arm) -> tuple:
        """Best first: value (posterior mean less the price of its tokens), then fewer tokens, then the
        description nearer the task."""
        return (-arm.value(self.config.token_price), arm.tokens_key, -arm.evidence.similarity,
                arm.evidence.harness_id)
