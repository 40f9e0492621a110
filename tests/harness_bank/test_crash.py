"""A writer killed with SIGKILL mid-stream loses no committed outcome."""

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

WRITER = textwrap.dedent("""
    import sys
    from harness_bank import HarnessBank, Outcome
    from jitagent.harness.seeds import load_seeds, seed_bank
    bank = HarnessBank(sys.argv[1])
    seed_bank(bank)
    harness = load_seeds()["direct"].id
    print("ready", flush=True)
    i = 0
    while True:
        bank.record_outcome(Outcome(harness_id=harness, task_id=f"t{i}", task_text=f"task text {i}",
                                    reward=1.0, prompt_tokens=10, completion_tokens=10, wall_s=0.1,
                                    cluster="c"))
        print(f"committed t{i}", flush=True)   # printed only after COMMIT returned
        i += 1
""")


def test_sigkill_mid_transaction_loses_no_committed_outcome(tmp_path):
    db_path = tmp_path / "bank.db"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(db_path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    committed = []
    deadline = time.monotonic() + 60
    while len(committed) < 15 and time.monotonic() < deadline:
        line = proc.stdout.readline().strip()
        if line.startswith("committed"):
            committed.append(line.split()[1])
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert len(committed) >= 15
    db = sqlite3.connect(db_path)
    assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    stored = {r[0] for r in db.execute("SELECT task_id FROM outcomes")}
    assert set(committed) <= stored
    # every stored outcome is whole: it has its experience vector (same transaction)
    orphans = db.execute("SELECT COUNT(*) FROM outcomes o WHERE NOT EXISTS "
                         "(SELECT 1 FROM vectors v WHERE v.kind = 'experience' AND v.ref = CAST(o.id AS "
                         "TEXT))").fetchone()[0]
    assert orphans == 0
    from harness_bank import HarnessBank
    reopened = HarnessBank(db_path)
    assert reopened.index.size == db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
