"""The bank's side of tool-making, through its facade: labelled tasks per cluster, a harness's outcomes
on them, attempts."""

from harness_bank import Outcome


def outcome(harness_id: str, task: str, reward: float, answer: str, tokens: int | None = 10) -> Outcome:
    return Outcome(harness_id=harness_id, task_id=task, task_text=f"text of {task}", reward=reward,
                   prompt_tokens=tokens, completion_tokens=tokens and 1, wall_s=0.1, cluster="type:t",
                   answer=answer)


def test_labelled_tasks_once_per_cluster_in_order(bank):
    for task_id in ("b", "a", "b"):
        bank.record_labelled_task("type:t", task_id, {"id": task_id, "prompt": f"text of {task_id}"})
    bank.record_labelled_task("type:u", "a", {"id": "a"})
    assert [t["id"] for t in bank.labelled_tasks("type:t")] == ["b", "a"]
    assert bank.labelled_tasks("type:none") == []


def test_a_harness_latest_outcomes_on_tasks(seeded_bank):
    harness = seeded_bank.list_harnesses()[0].id
    for task, reward, answer in (("a", 0.0, "8.0"), ("a", 1.0, "8"), ("b", 0.5, "x")):
        seeded_bank.record_outcome(outcome(harness, task, reward, answer))
    seeded_bank.record_outcome(outcome(harness, "c", 1.0, "y", tokens=None))
    got = seeded_bank.latest_outcomes(harness, "type:t", ["a", "c", "z"])
    assert got == {"a": {"reward": 1.0, "answer": "8", "prompt_tokens": 10, "completion_tokens": 1,
                         "wall_s": 0.1},
                   "c": {"reward": 1.0, "answer": "y", "prompt_tokens": None, "completion_tokens": None,
                         "wall_s": 0.1}}
    assert seeded_bank.latest_outcomes(harness, "type:other", ["a"]) == {}


def test_attempts_keep_their_evidence_cost_and_the_outcomes_seen(seeded_bank):
    parent = seeded_bank.list_harnesses()[0].id
    seeded_bank.record_outcome(outcome(parent, "a", 0.0, "8.0"))
    first = seeded_bank.record_code_attempt(
        cluster="type:t", stage="solve", parent_id=parent, harness_id=None, accepted=False,
        reason="rejected", detail={"heldout": ["a"]}, prompt_tokens=None, completion_tokens=40, wall_s=2.5)
    [attempt] = seeded_bank.code_attempts("type:t")
    assert attempt["id"] == first and attempt["accepted"] is False and attempt["detail"] == {"heldout": ["a"]}
    assert attempt["prompt_tokens"] is None and attempt["completion_tokens"] == 40
    assert attempt["outcomes_seen"] == 1 == seeded_bank.outcome_count("type:t")
    assert seeded_bank.code_attempts("type:other") == [] and seeded_bank.code_attempts(
        harness_id=parent) == []
