"""The bank on PostgreSQL (a real server) behaves as on SQLite: same decisions, same reads."""

import threading
from dataclasses import replace

import psycopg
import pytest

from harness_bank import HarnessBank, Outcome, RunRecord
from harness_bank.bank import BankError
from harness_bank.migrations import MIGRATIONS
from harness_bank.recorded import recorded_run
from harness_bank.store import StoreUnavailable, describe
from harness_bank.views import BankViews
from jitagent.config.paths import THROWAWAY_CLUSTER
from jitagent.harness.seeds import load_seeds, seed_bank

SEEDS = load_seeds()


def outcome(harness, reward, task_id, text="add two numbers", tokens=100, cluster="c1", **kw):
    return Outcome(harness_id=SEEDS[harness].id, task_id=task_id, task_text=text, reward=reward,
                   prompt_tokens=tokens // 2, completion_tokens=tokens - tokens // 2, wall_s=1.0, verdict="v",
                   cluster=cluster, **kw)


@pytest.fixture
def both(tmp_path, postgres_url, embedder):
    """A seeded SQLite bank and a seeded PostgreSQL bank."""
    banks = [HarnessBank(tmp_path / "bank.db", embedder=embedder),
             HarnessBank(postgres_url, embedder=embedder)]
    for bank in banks:
        seed_bank(bank)
    yield banks
    for bank in banks:
        bank.close()


def history(bank, cluster="c1"):
    return [(d["candidate_id"], d["previous_id"], d["kind"], d["reason"]) for d in bank.decisions(cluster)]


def test_admission_rollback_and_reads_match_sqlite(both):
    sqlite, postgres = both
    for bank in both:
        for i in range(6):
            bank.record_outcome(outcome("direct", 0.0 if i % 2 else 1.0, f"d{i}", tokens=90 + i))
        for i in range(8):
            bank.record_outcome(outcome("program_of_thought", 1.0, f"p{i}", f"add two numbers, case {i}"))
        bank.rollback("c1")
    assert history(postgres) == history(sqlite) and len(history(sqlite)) >= 3
    assert replace(postgres.incumbent("c1"), since=0) == replace(sqlite.incumbent("c1"), since=0)
    text = "add two numbers, case 3"
    assert postgres.search(text, 5) == sqlite.search(text, 5)
    assert postgres.arm_evidence(text, "c1", 3) == sqlite.arm_evidence(text, "c1", 3)
    assert postgres.cluster_for(text) == sqlite.cluster_for(text) == "c1"
    assert postgres.failures("c1", SEEDS["direct"].id) == sqlite.failures("c1", SEEDS["direct"].id)
    assert postgres.outcome_summary(SEEDS["direct"].id, ["d0", "d1"]) == (2, 0.5, 90.5)
    stats = postgres.stats()
    assert stats["schema_version"] == sqlite.stats()["schema_version"] == len(MIGRATIONS)
    assert stats["outcomes"] == 14 and stats["index_size"] == len(load_seeds()) + 14 and stats["db_bytes"] > 0


def test_a_redelivered_outcome_is_recorded_once(both):
    for bank in both:
        first = bank.record_outcome(outcome("direct", 1.0, "t1", delivery="tasks:1-0"))
        again = bank.record_outcome(outcome("direct", 0.0, "t1", delivery="tasks:1-0"))
        assert "needs 3" in first.reason and not again.promote and "already recorded" in again.reason
        assert bank.stats()["outcomes"] == 1 and bank.index.size == len(load_seeds()) + 1
        bank.record_outcome(outcome("direct", 1.0, "t1"))  # no delivery: every report counts
        bank.record_outcome(outcome("direct", 1.0, "t1"))
        assert bank.stats()["outcomes"] == 3


def test_the_views_and_a_recorded_run_read_as_on_sqlite(both):
    for bank in both:
        for i in range(6):
            harness = ("direct", "program_of_thought")[i % 2]
            run = RunRecord(run_id=f"r{i}", harness_id=SEEDS[harness].id, task_id=f"t{i % 4}",
                            task_text="add two numbers", cluster=("c1", "c2")[i % 3 == 0],
                            route=("exploit", "explore")[i % 2])
            if i == 5:  # a run with no outcome yet
                bank.record_run(run)
            else:
                bank.record_outcome(outcome(harness, i / 5, run.task_id, tokens=90 + i, cluster=run.cluster,
                                            run_id=run.run_id), run=run)
    views = [BankViews(bank) for bank in both]

    def read(view: BankViews) -> list:
        found = view.harness("direct")
        runs = [recorded_run(view.bank, f"r{i}") for i in range(7)]
        return [view.clusters(), view.arms("c1"), view.history("c2"), found.evidence, found.lineage[0].id,
                [(r.run.run_id, r.harness.id, r.reward, r.verdict) if r else None for r in runs]]
    assert read(views[1]) == read(views[0])


def test_only_a_server_has_a_cluster_name(both):
    sqlite, postgres = both
    assert sqlite.store.server_cluster_name() is None
    assert postgres.store.server_cluster_name() == THROWAWAY_CLUSTER  # the test server's, as fleet dev's


def test_bad_input_is_refused_in_one_line_and_nothing_is_written(both):
    _, postgres = both
    before = postgres.stats()
    with pytest.raises(BankError, match="reward"):
        postgres.record_outcome(outcome("direct", 1.5, "t"))
    with pytest.raises(BankError, match="unknown harness"):
        postgres.record_outcome(Outcome(harness_id="nope", task_id="t", task_text="x", reward=1.0,
                                        prompt_tokens=1, completion_tokens=1, wall_s=1.0))
    with pytest.raises(BankError, match="pg_dump"):
        postgres.backup("/tmp/never-written.db")
    assert postgres.stats() == before


def test_an_unreachable_server_is_one_line_without_the_password(embedder):
    url = "postgresql://someone:s3cret@127.0.0.1:1/nowhere"
    with pytest.raises(StoreUnavailable) as err:
        HarnessBank(url, embedder=embedder)
    message = str(err.value)
    assert "\n" not in message and "s3cret" not in message and "127.0.0.1:1" in message
    assert describe(url) == "postgresql://someone:***@127.0.0.1:1/nowhere"


def test_replicas_starting_at_once_migrate_and_seed_once(postgres_url, embedder):
    banks, errors = [], []

    def start():
        try:
            bank = HarnessBank(postgres_url, embedder=embedder)
            seed_bank(bank)
            banks.append(bank)
        except Exception as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)
    threads = [threading.Thread(target=start) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(banks) == 3
    assert banks[0].store.query("SELECT COUNT(*) FROM schema_version")[0][0] == 1
    seeds = len(load_seeds())
    assert banks[0].stats()["harnesses"] == seeds
    assert banks[0].store.query("SELECT COUNT(*) FROM vectors WHERE kind = 'harness'")[0][0] == seeds
    for bank in banks:
        bank.catch_up()
        assert bank.index.size == seeds
        bank.close()


def test_a_bank_migrated_by_a_newer_jitagent_is_refused_in_one_line(postgres_url, embedder):
    HarnessBank(postgres_url, embedder=embedder).close()
    with psycopg.connect(postgres_url, autocommit=True) as db:
        db.execute("UPDATE schema_version SET version = version + 1")
    with pytest.raises(StoreUnavailable, match=r"^the bank's schema is version \d+, newer than .*: upgrade"):
        HarnessBank(postgres_url, embedder=embedder)
