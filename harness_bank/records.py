"""The records the bank and the router hand around, keyword-only: neighbouring fields share a type
(`prompt_tokens`/`completion_tokens`, `runs`/`near_weight`), so a positional swap would pass silently.

The bank owns `Outcome`, `RunRecord`, `HarnessRecord`, `Hit`, `Incumbent` and `Rollback`: what it
stores and what it reads back. The router (harness_bank/router.py) owns `ArmEvidence` and `ArmSummary`:
the bank gathers an arm's evidence for it, the router weighs it and reports the posterior.
`BankError` is the bank's refusal of a request.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(kw_only=True)
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
    solution: list[dict] | None = None  # the turns that gave the answer; None: not one conversation
    evidence: str | None = None  # what admitted it: verifier:KIND, report, report:TENANT (None: unsaid)


@dataclass(kw_only=True)
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
    solution: list[dict] | None = None  # the turns that gave its answer: shown to later tasks once verified
    outcomes: int = 0  # recorded for it so far: 0 or 1

    def outcome(self, reward: float, verdict: str, prompt_tokens: int | None, completion_tokens: int | None,
                wall_s: float, evidence: str = "report") -> Outcome:
        """Feedback on this run as the bank's evidence (`evidence`: who reported it)."""
        return Outcome(harness_id=self.harness_id, task_id=self.task_id, task_text=self.task_text,
                       reward=reward, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                       wall_s=wall_s, verdict=verdict, cluster=self.cluster, task_type=self.task_type,
                       tags=self.tags, source="feedback", answer=self.answer, trace=self.trace,
                       run_id=self.run_id, solution=self.solution, evidence=evidence)


@dataclass(frozen=True, kw_only=True)
class Solution:
    """A verified run's turns, as the cluster's later tasks may be shown them, with its task's embedding."""

    outcome_id: int | None  # None: a kept practice try (harness_bank.practice), named by its `run_id`
    run_id: str | None
    harness_id: str
    cluster: str | None
    task_id: str
    task_text: str
    turns: list[dict]
    reward: float
    vector: np.ndarray
    verdict: str = ""  # the verifier's (or the report's) word on the run
    evidence: str | None = None  # what admitted it (Outcome.evidence)
    created_at: float = 0.0


@dataclass(kw_only=True)
class Hit:
    harness_id: str
    name: str
    score: float
    similarity: float
    prior_reward: float | None
    prior_runs: int


@dataclass(frozen=True, kw_only=True)
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


@dataclass(frozen=True, kw_only=True)
class Incumbent:
    """A cluster's incumbent and its record there."""

    cluster: str
    harness_id: str
    since: float
    runs: int
    mean_reward: float | None
    mean_tokens: float | None  # None: some token count unknown


@dataclass(frozen=True, kw_only=True)
class Rollback:
    cluster: str
    restored: str  # the incumbent again
    replaced: str  # the one it replaces


@dataclass(frozen=True, kw_only=True)
class ArmEvidence:
    """What the bank knows of one harness for one task: the bank gathers it, the router weighs it."""

    harness_id: str
    name: str
    origin: str
    runs: int = 0                     # outcomes in this cluster
    reward_sum: float = 0.0
    near_weight: float = 0.0          # similarity-weighted outcomes on the nearest past tasks, other clusters
    near_reward: float | None = None  # their similarity-weighted mean reward
    global_runs: int = 0              # outcomes of the harness in other clusters
    global_reward: float | None = None
    mean_tokens: float | None = None  # unknown stays unknown: it never passes for the cheapest
    similarity: float = 0.0           # of its description to the task (ties only)


@dataclass(frozen=True, kw_only=True)
class ArmSummary:
    """An arm as a route reports it: the posterior rounded for reading."""

    harness_id: str
    name: str
    runs: int  # outcomes in this cluster
    mean: float  # posterior mean reward
    prior_mean: float
    prior_weight: float
    mean_tokens: float | None  # None: unknown
    similarity: float


class BankError(ValueError):
    """A request the bank cannot honour (unknown id, invalid outcome); nothing was written."""
