"""A run as the bank recorded it, with its outcome where it has one: what a retried request is answered
with when the run it names is over (jitagent.solving.layer). Read through the bank's public calls and
its ledger."""

from __future__ import annotations

from dataclasses import dataclass

from harness_bank.bank import HarnessBank
from harness_bank.ledger import Ledger
from harness_bank.records import BankError, HarnessRecord, RunRecord


@dataclass(frozen=True, kw_only=True)
class RecordedRun:
    run: RunRecord
    harness: HarnessRecord
    reward: float | None  # None: no outcome (not verified, nothing reported)
    verdict: str


def recorded_run(bank: HarnessBank, run_id: str) -> RecordedRun | None:
    """The run recorded under `run_id`, or None when there is none."""
    try:
        run = bank.run(run_id)
    except BankError:
        return None
    reward, verdict = Ledger(bank.store).run_outcome(run_id) or (None, "")
    return RecordedRun(run=run, harness=bank.get(run.harness_id), reward=reward, verdict=verdict)
