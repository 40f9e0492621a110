"""Replicas on one PostgreSQL bank (each its own pool, index and watcher): they see each other's
writes within a measured delay, and concurrent admissions decide as serial ones would."""

import threading
import time

import pytest

from harness_bank import HarnessBank, Outcome
from jitagent.harness.seeds import load_seeds, seed_bank
from jitagent.harness.spec import parse_spec

SEEDS = load_seeds()
SYNC_BOUND_S = 2.0  # a missed NOTIFY is still caught by the 1 s poll


@pytest.fixture
def replicas(postgres_url, embedder):
    banks = [HarnessBank(postgres_url, embedder=embedder) for _ in range(2)]
    seed_bank(banks[0])
    for bank in banks:
        bank.catch_up()
    yield banks
    for bank in banks:
        bank.close()


def variant(name: str) -> dict:
    data = SEEDS["react"].model_dump(mode="json")
    data["name"] = name
    data["description"] = f"{name}: a react loop that first lists every unit conversion it will need"
    return parse_spec(data).derive(origin="synthesized", parent_id=SEEDS["react"].id, generator="test") \
        .model_dump(mode="json")


def test_a_harness_added_on_a_is_retrievable_on_b_within_the_bound(replicas):
    a, b = replicas
    delays = []
    for i in range(5):
        spec = variant(f"converter{i}")
        a.embedder.embed_one(f"{spec['name']}: {spec['description']}")  # measure the write, not the embedding
        start = time.perf_counter()
        a.add_harness(spec)
        assert b.wait_synced(a.watermark, SYNC_BOUND_S)
        delays.append(time.perf_counter() - start)
        assert b.get(spec["envelope"]["id"]).name == spec["name"]
    # an earned reward makes a synthesized harness retrievable; B's index finds the experience
    text = "convert 3 miles to kilometres, listing each conversion"
    for i in range(3):
        a.record_outcome(Outcome(harness_id=spec["envelope"]["id"], task_id=f"u{i}",
                                 task_text=f"{text} #{i}", reward=1.0, prompt_tokens=10, completion_tokens=10,
                                 wall_s=0.1, cluster="units"))
    assert b.wait_synced(a.watermark, SYNC_BOUND_S)
    assert spec["name"] in [h.name for h in b.search(text, k=3)]
    assert b.cluster_for(text + " #9") == "units"
    print(f"replica sync delay (a write starts on A -> indexed on B): max {max(delays) * 1000:.1f} ms")


def test_concurrent_admissions_from_two_replicas_decide_as_serial_ones(replicas, tmp_path, embedder):
    """Both replicas record outcomes for one cluster at once; the same outcomes applied one after
    another (in the order the database serialized them) to a fresh bank give the same history."""
    tokens = {"direct": 40, "program_of_thought": 20, "codeact": 8}  # each cheaper: promoted when tied
    plan = {0: [("direct", r) for r in (1, 0, 1, 1, 0, 1) * 4],
            1: [("program_of_thought", 1)] * 12 + [("codeact", r) for r in (1, 1, 1, 1, 0, 1) * 2]}
    work = {replica: [Outcome(harness_id=SEEDS[name].id, task_id=f"r{replica}-{i}",
                              task_text=f"sum the list #{replica}-{i}", reward=float(reward),
                              prompt_tokens=tokens[name] + i % 3, completion_tokens=10, wall_s=0.5,
                              cluster="lists")
                      for i, (name, reward) in enumerate(steps)]
            for replica, steps in plan.items()}
    embedder.embed([o.task_text for outcomes in work.values() for o in outcomes])  # the loops are all bank
    barrier = threading.Barrier(2)

    def admit(replica: int):
        for i, o in enumerate(work[replica]):
            if i % 4 == 0:  # rounds of four at once: the replicas overlap however the threads are scheduled
                barrier.wait()
            replicas[replica].record_outcome(o)
    threads = [threading.Thread(target=admit, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    applied = replicas[0].store.query("SELECT * FROM outcomes ORDER BY id")
    serial = HarnessBank(tmp_path / "serial.db", embedder=embedder)
    seed_bank(serial)
    for row in applied:
        serial.record_outcome(Outcome(harness_id=row["harness_id"], task_id=row["task_id"],
                                      task_text=row["task_text"], reward=row["reward"],
                                      prompt_tokens=row["prompt_tokens"],
                                      completion_tokens=row["completion_tokens"], wall_s=row["wall_s"],
                                      cluster="lists"))
    assert history(replicas[1]) == history(serial)
    assert sum(kind == "promote" for _, _, kind, _ in history(serial)) >= 2
    serial.close()


def history(bank) -> list[tuple]:
    return [(d["candidate_id"], d["previous_id"], d["kind"], d["reason"]) for d in bank.decisions("lists")]


def test_concurrent_rollbacks_from_two_replicas_undo_two_promotions(replicas):
    a, b = replicas
    for name, tokens in (("direct", 300), ("program_of_thought", 200), ("codeact", 100)):  # three in turn
        for i in range(8):
            a.record_outcome(Outcome(harness_id=SEEDS[name].id, task_id=f"{name}{i}",
                                     task_text=f"sort the words #{i}", reward=1.0, prompt_tokens=tokens,
                                     completion_tokens=0, wall_s=1.0, cluster="words"))
    assert a.incumbent("words").harness_id == SEEDS["codeact"].id
    barrier, done = threading.Barrier(2), []

    def roll(bank):
        barrier.wait()
        done.append(bank.rollback("words"))
    threads = [threading.Thread(target=roll, args=(bank,)) for bank in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(d.restored for d in done) == sorted([SEEDS["program_of_thought"].id, SEEDS["direct"].id])
    assert b.incumbent("words").harness_id == SEEDS["direct"].id


def test_an_index_cache_is_caught_up_on_open_and_one_of_another_database_rebuilt(
        postgres_server, postgres_url, tmp_path, embedder):
    from jitagent.fleet.services import create_database

    cache = tmp_path / "replica.faiss"
    first = HarnessBank(postgres_url, embedder=embedder, index_path=cache)
    seed_bank(first)
    first.close()  # saves the cache: the seeds' vectors
    other_replica = HarnessBank(postgres_url, embedder=embedder)
    other_replica.add_harness(variant("late"))  # written while the first replica is down
    other_replica.close()
    first = HarnessBank(postgres_url, embedder=embedder, index_path=cache)
    assert first.repaired_on_open and first.index.size == first.watermark == len(load_seeds()) + 1
    first.close()
    elsewhere = create_database(postgres_server, "elsewhere")  # same ids, other vectors
    bank = HarnessBank(elsewhere, embedder=embedder)
    bank.add_harness(SEEDS["react"].model_dump(mode="json"))
    bank.add_harness(variant("first here"))
    seed_bank(bank)
    bank.close()
    reopened = HarnessBank(elsewhere, embedder=embedder, index_path=cache)
    stored = reopened.store.query("SELECT vector FROM vectors WHERE vid = 14")[0][0]
    assert reopened.repaired_on_open and reopened.index.vector(14).tobytes() == bytes(stored)
    reopened.close()
