"""The practice log: tries on failed tasks kept with their cost, the passed ones among the cluster's
solutions, none of them evidence for routing; bad input stores nothing; SQLite and PostgreSQL read alike."""

import dataclasses

import pytest

from harness_bank import HarnessBank, Outcome, RunRecord
from harness_bank.practice import PracticeTally, PracticeTry
from harness_bank.records import BankError
from jitagent.harness.seeds import load_seeds, seed_bank

POT = load_seeds()["program_of_thought"]
CLUSTER = "type:times"
TURNS = [{"role": "assistant", "content": "print(21)"}]


def served(bank: HarnessBank, run_id: str = "r1") -> None:
    bank.record_run(RunRecord(run_id=run_id, harness_id=POT.id, task_id="t3", task_text="What is 3 times 7?",
                              cluster=CLUSTER, route="exploit"))


def attempt(**kw) -> PracticeTry:
    return dataclasses.replace(PracticeTry(
        run_id="r1", harness_id=POT.id, cluster=CLUSTER, task_id="t3", task_text="What is 3 times 7?",
        reward=1.0, verdict="ok", solution=TURNS, prompt_tokens=30, completion_tokens=5, wall_s=0.5,
        evidence="practice:numeric"), **kw)


def test_kept_tries_are_solutions_newest_first_and_never_evidence(seeded_bank):
    served(seeded_bank)
    seeded_bank.record_outcome(Outcome(harness_id=POT.id, task_id="t1", task_text="What is 1 times 7?",
                                       reward=1.0, prompt_tokens=5, completion_tokens=5, wall_s=0.1,
                                       cluster=CLUSTER, solution=TURNS))
    evidence = seeded_bank.arm_evidence("What is 3 times 7?", CLUSTER, 1)
    seeded_bank.record_practice(attempt(reward=0.0, solution=None, verdict="expected 21, got 0"))
    kept = seeded_bank.record_practice(attempt())
    assert [s.run_id or s.outcome_id for s in seeded_bank.solutions(CLUSTER, 1.0, None)] == [
        f"practice:{kept}", seeded_bank.solutions(CLUSTER, 1.0, None)[1].outcome_id]
    assert [s.run_id for s in seeded_bank.solutions(CLUSTER, 1.0, 1)] == [f"practice:{kept}"]
    assert seeded_bank.solutions(CLUSTER, 1.0, None)[0].evidence == "practice:numeric"
    assert seeded_bank.arm_evidence("What is 3 times 7?", CLUSTER, 1) == evidence
    assert seeded_bank.tasks_seen(CLUSTER) == 1 and seeded_bank.stats()["outcomes"] == 1
    assert seeded_bank.practice_tally() == PracticeTally(tries=2, kept=1, tokens=70, wall_s=1.0)
    assert seeded_bank.practice_tally([]) == PracticeTally(0, 0, 0, 0.0)


def test_an_unknown_count_or_reward_stays_unknown(seeded_bank):
    served(seeded_bank)
    seeded_bank.record_practice(attempt(reward=None, solution=None, prompt_tokens=None))
    assert seeded_bank.practice_tally() == PracticeTally(tries=1, kept=0, tokens=None, wall_s=0.5)
    assert seeded_bank.solutions(CLUSTER, 0.0, None) == []


@pytest.mark.parametrize("bad, says", [
    ({"reward": 1.5}, "reward must be in"), ({"harness_id": "nope"}, "unknown harness id"),
    ({"task_text": "  "}, "task_text must not be empty")])
def test_a_bad_try_is_refused_and_stores_nothing(seeded_bank, bad, says):
    served(seeded_bank)
    with pytest.raises(BankError, match=says):
        seeded_bank.record_practice(attempt(**bad))
    assert seeded_bank.practice_tally().tries == 0


def test_practice_reads_the_same_on_postgresql(tmp_path, postgres_url, embedder):
    banks = [HarnessBank(tmp_path / "bank.db", embedder=embedder),
             HarnessBank(postgres_url, embedder=embedder)]
    for bank in banks:
        seed_bank(bank)
        served(bank, "pg-r1")
        bank.record_practice(attempt(run_id="pg-r1"))
        bank.record_practice(attempt(run_id="pg-r1", reward=0.0, solution=None))
    sqlite, postgres = ([(s.task_id, s.turns, s.reward, s.vector.tolist())
                         for s in b.solutions(CLUSTER, 1.0, None)] + [b.practice_tally(["pg-r1"])]
                        for b in banks)
    assert sqlite == postgres and len(sqlite) == 2
    for bank in banks:
        bank.close()
