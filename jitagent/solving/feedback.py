"""Feedback: an outcome someone reports is evidence like any other — one outcome, and the bank's
admission decides (no harness becomes incumbent on one report).

By run id, the harness, task and cluster come from the run the pipeline recorded, and so does its
cost where the server executed it; a run takes one outcome. Free-form, for a harness run elsewhere,
the reporter names the harness and the task.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness_bank import Decision, HarnessBank, Outcome
from harness_bank.bank import BankError
from jitagent.common.errors import clipped
from jitagent.solving.result import Reported

MAX_DETAIL = 2_000  # characters of a report's free text


class FeedbackError(ValueError):
    """A report the bank cannot take; `field` names what is wrong, `kind` says how."""

    def __init__(self, kind: str, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.kind = kind  # invalid | not_found | already_reported
        self.field = field
        self.description = message


@dataclass
class Report:
    reward: float
    detail: str = ""
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    wall_s: float | None = None  # None: the server's measurement, where it executed the run
    evidence: str = "report"  # who reported it (`report:TENANT` where there are tenants), kept with it

    def check(self) -> None:
        if not 0.0 <= self.reward <= 1.0:  # NaN fails this too
            raise FeedbackError("invalid", "reward", f"must be in [0, 1], got {self.reward}")
        if len(self.detail) > MAX_DETAIL:  # kept with the outcome: a client's string has a cap like any
            raise FeedbackError("invalid", "detail", f"at most {MAX_DETAIL:,} characters, got "
                                                     f"{len(self.detail):,}")
        if self.wall_s is not None and not (math.isfinite(self.wall_s) and self.wall_s >= 0):
            raise FeedbackError("invalid", "wall_s", f"must be a finite number >= 0, got {self.wall_s}")
        for name in ("prompt_tokens", "completion_tokens"):
            if (getattr(self, name) or 0) < 0:
                raise FeedbackError("invalid", name, "must not be negative")


@dataclass
class Recorded:
    cluster: str
    harness_id: str
    decision: Decision
    incumbent_id: str | None

    def reported(self) -> Reported:
        return Reported(cluster=self.cluster, harness_id=self.harness_id, promoted=self.decision.promote,
                        reason=self.decision.reason, incumbent_id=self.incumbent_id)


def report_run(bank: HarnessBank, run_id: str, report: Report) -> Recorded:
    """Attach `report` to the run recorded under `run_id`."""
    report.check()
    try:
        run = bank.run(run_id)
    except BankError:
        raise FeedbackError("not_found", "run_id", f"no run {clipped(repr(run_id))} in this bank") from None
    if run.outcomes:
        raise FeedbackError(
            "already_reported", "run_id", f"run {run_id} already has an outcome; a run takes one"
        )
    wall_s = report.wall_s if report.wall_s is not None else run.wall_s
    if wall_s is None:
        raise FeedbackError(
            "invalid", "wall_s", f"the server did not execute run {run_id}: say how long it took"
        )
    outcome = run.outcome(
        report.reward,
        report.detail,
        run.prompt_tokens if report.prompt_tokens is None else report.prompt_tokens,
        run.completion_tokens if report.completion_tokens is None else report.completion_tokens,
        wall_s,
        report.evidence,
    )
    return _record(bank, outcome)


def report_harness(
    bank: HarnessBank,
    harness_id: str,
    task_text: str,
    report: Report,
    *,
    task_id: str = "",
    task_type: str | None = None,
    tags: tuple[str, ...] = (),
) -> Recorded:
    """An outcome of a harness run elsewhere, on a task the reporter describes."""
    report.check()
    if not harness_id:
        raise FeedbackError("invalid", "harness_id", "required (or give run_id)")
    if not task_text.strip():
        raise FeedbackError("invalid", "task_text", "must not be empty")
    if report.wall_s is None:
        raise FeedbackError("invalid", "wall_s", "required: how long the run took")
    try:
        bank.get(harness_id)
    except BankError:
        raise FeedbackError("not_found", "harness_id",
                            f"no harness {clipped(repr(harness_id))} in this bank") from None
    cluster = bank.cluster_for(task_text, task_type, tags)
    return _record(
        bank,
        Outcome(harness_id=harness_id, task_id=task_id or "external", task_text=task_text,
                reward=report.reward, prompt_tokens=report.prompt_tokens,
                completion_tokens=report.completion_tokens, wall_s=report.wall_s, verdict=report.detail,
                cluster=cluster, task_type=task_type, tags=tags, source="feedback", evidence=report.evidence),
    )


def _record(bank: HarnessBank, outcome: Outcome) -> Recorded:
    decision = bank.record_outcome(outcome)
    incumbent = bank.incumbent(outcome.cluster)
    return Recorded(outcome.cluster, outcome.harness_id, decision,
                    incumbent.harness_id if incumbent else None)
