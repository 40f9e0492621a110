"""The harness bank: every harness ever made, how it did, and the incumbent per task cluster.

The database is the source of truth: an SQLite file (the embedded default) or PostgreSQL shared by
a fleet's replicas and workers. Each process's faiss index is derived from it and can always be rebuilt.
This package knows nothing of models, the runtime or the server.
"""

from harness_bank.admission import AdmissionPolicy, Decision, Stats
from harness_bank.bank import HarnessBank
from harness_bank.records import HarnessRecord, Hit, Incumbent, Outcome, Rollback, RunRecord

__all__ = ["AdmissionPolicy", "Decision", "HarnessBank", "HarnessRecord", "Hit", "Incumbent", "Outcome",
           "Rollback", "RunRecord", "Stats"]
