"""Frontier-only admission: a candidate replaces a cluster's incumbent only on credible progress.

Rule (every decision carries its reason):
1. fewer than `min_runs` runs of the candidate → no change (a lucky run, or one report, is not evidence);
2. no incumbent yet → the candidate becomes incumbent if it earned any reward;
3. reward difference whose 95% interval lies above zero → promote (higher reward beyond noise);
4. interval containing zero (tied within noise) and candidate mean not lower by more than
   `tie_margin` → promote if it is cheaper by `cost_margin` in tokens, or else faster by it;
5. otherwise keep the incumbent.
Variances use add-one smoothing so that a perfect 3/3 is not taken as zero variance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Stats:
    n: int
    mean_reward: float
    var_reward: float
    mean_tokens: float | None
    mean_wall_s: float

    @classmethod
    def of(cls, rewards: list[float], tokens: list[int | None], walls: list[float]) -> Stats:
        n = len(rewards)
        mean = sum(rewards) / n if n else 0.0
        smoothed = (sum(rewards) + 1) / (n + 2)  # add-one smoothing for [0,1] rewards
        var = max(sum((r - mean) ** 2 for r in rewards) / max(n - 1, 1), smoothed * (1 - smoothed))
        known = [t for t in tokens if t is not None]
        mean_tokens = sum(known) / len(known) if known and len(known) == len(tokens) else None
        return cls(n, mean, var, mean_tokens, sum(walls) / n if n else 0.0)


@dataclass(frozen=True)
class Decision:
    promote: bool
    reason: str


@dataclass(frozen=True)
class AdmissionPolicy:
    min_runs: int = 3
    z: float = 1.96
    tie_margin: float = 0.05
    cost_margin: float = 0.10

    def decide(self, candidate: Stats, incumbent: Stats | None) -> Decision:
        if candidate.n < self.min_runs:
            return Decision(False, f"candidate has {candidate.n} run(s), needs {self.min_runs}")
        if incumbent is None:
            if candidate.mean_reward > 0:
                return Decision(True, f"first harness with {candidate.n} runs and reward "
                                      f"{candidate.mean_reward:.2f} in this cluster")
            return Decision(False,
                            f"no incumbent yet and this candidate earned nothing in {candidate.n} runs")
        diff = candidate.mean_reward - incumbent.mean_reward
        half_width = self.z * math.sqrt(candidate.var_reward / candidate.n
                                        + incumbent.var_reward / max(incumbent.n, 1))
        summary = (f"reward {candidate.mean_reward:.2f} (n={candidate.n}) vs {incumbent.mean_reward:.2f} "
                   f"(n={incumbent.n}), diff {diff:+.2f} ± {half_width:.2f}")
        if diff - half_width > 0:
            return Decision(True, f"higher reward beyond noise: {summary}")
        if diff + half_width < 0 or diff < -self.tie_margin:
            return Decision(False, f"not better: {summary}")
        if candidate.mean_tokens is not None and incumbent.mean_tokens is not None \
                and candidate.mean_tokens < incumbent.mean_tokens * (1 - self.cost_margin):
            return Decision(True, f"tied within noise and cheaper: {candidate.mean_tokens:.0f} vs "
                                  f"{incumbent.mean_tokens:.0f} tokens; {summary}")
        if candidate.mean_wall_s < incumbent.mean_wall_s * (1 - self.cost_margin):
            return Decision(True, f"tied within noise and faster: {candidate.mean_wall_s:.2f}s vs "
                                  f"{incumbent.mean_wall_s:.2f}s; {summary}")
        return Decision(False, f"tied within noise, not cheaper or faster: {summary}")
