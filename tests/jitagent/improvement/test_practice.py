"""Practice: a failed task tried again in the background with the client's check, what passes kept as the
cluster's solutions and nothing of it in routing (the real bank and sandbox; a scripted solver that fails a
task the first time it sees it and answers it right after)."""

import asyncio
import re
from collections import Counter
from contextlib import asynccontextmanager

from harness_bank import Outcome
from harness_bank.router import RouterConfig
from jitagent.harness.seeds import load_seeds
from jitagent.improvement.practice import PracticeConfig
from jitagent.models.scripted import ScriptedModel
from jitagent.solving import pipeline as pipeline_module
from jitagent.solving.config import PipelineConfig
from jitagent.solving.feedback import Report
from jitagent.solving.pipeline import JitPipeline
from jitagent.tasks.task import Task, VerifierSpec

SEEDS = load_seeds()
CLUSTER = "type:times"
ARMS = ("program_of_thought", "direct", "codeact")


def check(n: int) -> VerifierSpec:
    return VerifierSpec(kind="numeric", expected=n * 7)


def sent(n: int) -> Task:
    """The task as a client sends it: without its check."""
    return Task(id=f"t{n}", prompt=f"What is {n} times 7?", type="times")


def learner() -> ScriptedModel:
    """Wrong the first time it meets a task's text, right from then on."""
    seen: Counter = Counter()

    def reply(messages):
        asked = re.findall(r"What is (\d+) times", " ".join(m["content"] for m in messages))
        if not asked:
            return "Nothing to add."  # a harness's own call (a memory's summary)
        n = int(asked[-1])
        seen[n] += 1
        return f"print({n * 7 if seen[n] > 1 else 0})"  # a program, or an answer whose last number counts
    return ScriptedModel(reply)


def pipeline(bank, tries: int, solver: ScriptedModel | None = None, give_up: int = 12) -> JitPipeline:
    for name in ARMS:  # the cluster's three arms, each with evidence
        bank.record_outcome(Outcome(harness_id=SEEDS[name].id, task_id=f"{name}-0",
                                    task_text=f"What is 100 times 7 ({name})?", reward=1.0, prompt_tokens=5,
                                    completion_tokens=5, wall_s=0.1, cluster=CLUSTER))
    config = PipelineConfig(router=RouterConfig(synth_start=0, synth_floor=0, references=1),
                            practice=PracticeConfig(tries=tries, give_up=give_up))
    return JitPipeline(bank, ScriptedModel(["{}"]), solver or learner(), config)


def served_and_reported(p: JitPipeline, n: int, reward: float, with_check: bool = True):
    """Task n served, its reward reported (with its check), and what practice it started done."""
    async def go():
        result = await p.solve(sent(n))
        await p.report_outcome(Report(reward), run_id=result.run_id, check=check(n) if with_check else None)
        await p.settle()
        return result
    return asyncio.run(go())


def test_a_failure_reported_with_its_check_is_tried_again_by_another_arm_and_kept(seeded_bank):
    p = pipeline(seeded_bank, tries=2)
    before = {e.harness_id: (e.runs, e.reward_sum) for e in seeded_bank.arm_evidence("What is 3 times 7?",
                                                                                     CLUSTER, 0)[0]}
    result = served_and_reported(p, 3, reward=0.0)
    kept = seeded_bank.solutions(CLUSTER, 1.0, None)
    practised = [s for s in kept if s.run_id.startswith("practice:")]
    assert len(practised) == 1  # the first try passed: no second
    others = [h for h in p.routing.ranked(sent(3), CLUSTER) if h != result.harness.id]
    assert practised[0].harness_id == others[0]  # the best arm but the one that failed
    assert (practised[0].task_id, practised[0].evidence) == ("t3", "practice:numeric")
    assert seeded_bank.practice_tally() == seeded_bank.practice_tally([result.run_id])
    tally = seeded_bank.practice_tally()
    assert (tally.tries, tally.kept) == (1, 1) and tally.tokens > 0 and tally.wall_s > 0
    after = {e.harness_id: (e.runs, e.reward_sum) for e in seeded_bank.arm_evidence("What is 3 times 7?",
                                                                                    CLUSTER, 0)[0]}
    before[result.harness.id] = (before[result.harness.id][0] + 1, before[result.harness.id][1])
    assert after == before  # the served run's 0 is the only new evidence: a try is never an outcome
    assert seeded_bank.tasks_seen(CLUSTER) == len(ARMS) + 1  # their evidence and the served task


def test_a_kept_try_is_shown_to_later_tasks_never_to_its_own_text(seeded_bank):
    from jitagent.improvement.examples import eligible, with_examples
    p = pipeline(seeded_bank, tries=1)
    served_and_reported(p, 4, reward=0.0)
    practised = next(s for s in seeded_bank.solutions(CLUSTER, 1.0, None) if s.run_id.startswith("practice"))
    variant = with_examples(p.spec_of(practised.harness_id))
    later = [s.run_id for s in eligible(seeded_bank, p.spec_of, variant, sent(5), CLUSTER)]
    again = [s.run_id for s in eligible(seeded_bank, p.spec_of, variant,
                                        sent(4).model_copy(update={"id": "t4-again"}), CLUSTER)]
    assert practised.run_id in later and practised.run_id not in again


def test_nothing_is_practised_off_without_a_check_or_on_a_success(seeded_bank):
    for tries, reward, with_check in ((0, 0.0, True), (2, 0.0, False), (2, 1.0, True)):
        p = pipeline(seeded_bank, tries=tries)
        served_and_reported(p, 10 + tries * 3 + int(reward) + int(with_check) * 5, reward, with_check)
        assert p.practice.job is None
    assert seeded_bank.practice_tally().tries == 0


def test_a_try_that_fails_its_check_is_counted_and_not_kept(seeded_bank):
    p = pipeline(seeded_bank, tries=2, solver=ScriptedModel(["print(0)"]))  # never right
    result = served_and_reported(p, 6, 0.0)
    others = [h for h in p.routing.ranked(sent(6), CLUSTER) if h != result.harness.id]
    tally = seeded_bank.practice_tally()
    assert len(others) >= 2 and (tally.tries, tally.kept) == (2, 0)  # the best two others, neither kept
    assert [s for s in seeded_bank.solutions(CLUSTER, 0.0, None) if s.run_id.startswith("practice")] == []


def test_a_cluster_whose_tries_kept_nothing_is_practised_no_more(seeded_bank):
    p = pipeline(seeded_bank, tries=2, solver=ScriptedModel(["print(0)"]), give_up=2)
    served_and_reported(p, 7, 0.0)
    assert seeded_bank.practice_tally(cluster=CLUSTER).tries == 2
    served_and_reported(p, 8, 0.0)
    assert seeded_bank.practice_tally().tries == 2  # given up: the second failure is not tried


def test_each_try_takes_the_callers_place_to_work_and_a_code_check_runs_only_where_runs_are_confined(
        seeded_bank):
    entered = []

    @asynccontextmanager
    async def slot():
        entered.append(1)
        yield

    p = pipeline(seeded_bank, tries=2, solver=ScriptedModel(["print(0)"]))

    async def go(n, check_with, unconfined=False):
        p.config.runs_code = not unconfined
        result = await p.solve(sent(n))
        await p.report_outcome(Report(0.0), run_id=result.run_id, check=check_with, slot=slot)
        await p.settle()
    asyncio.run(go(11, check(11)))
    assert len(entered) == seeded_bank.practice_tally().tries == 2
    asyncio.run(go(12, VerifierSpec(kind="shell_check", command="true"), unconfined=True))
    assert seeded_bank.practice_tally().tries == 2  # a check that runs code, on a host that cannot confine it


def test_only_unverified_runs_are_remembered_and_within_a_size(seeded_bank, monkeypatch):
    p = pipeline(seeded_bank, tries=1)
    verified_task = sent(13).model_copy(update={"verifier": check(13)})
    asyncio.run(p.solve(verified_task))
    assert not p._sent  # its outcome is in: no report will come to practise
    monkeypatch.setattr(pipeline_module, "REMEMBERED_CHARS", 2 * len(sent(14).prompt))
    for n in (14, 15, 16):
        asyncio.run(p.solve(sent(n)))
    assert [task.id for task, _ in p._sent.values()] == ["t15", "t16"]  # the oldest went first
