"""On-policy correction: the expert rewrites only the failing turn, the run is replayed through the real
runtime and sandbox, and only a correction its verifier passes is kept (a scripted solver and expert, whose
programs are right or wrong as each test needs)."""

import asyncio
import re

import numpy as np

from harness_bank.admission import Stats
from harness_bank.records import Solution
from jitagent.harness.seeds import load_seeds, spec_reader
from jitagent.improvement.recording import record_verified
from jitagent.improvement.training.correct import (
    CorrectionConfig,
    Yield,
    corrections,
    expert_messages,
    worth_correcting,
)
from jitagent.improvement.training.export import ExportConfig
from jitagent.models.scripted import ScriptedModel
from jitagent.runtime.agent import Runtime
from jitagent.tasks.task import Task

POT = load_seeds()["program_of_thought"]


def task(n: int, split: str = "learn") -> Task:
    return Task(id=f"times-{n}-{split}", prompt=f"What is {n} times 7?", type="times", split=split,
                verifier={"kind": "numeric", "expected": n * 7})


def multiplier(factor: int):
    """A model whose program multiplies the task's number by `factor` (7 is right)."""
    def reply(messages):
        n = int(re.findall(r"What is (\d+) times", "\n".join(m["content"] for m in messages))[-1])
        return f"print({n} * {factor})"
    return ScriptedModel(reply, name=f"times-{factor}")


def record(bank, t: Task, factor: int) -> None:
    run = asyncio.run(Runtime(multiplier(factor)).run(POT, t))
    bank.add_harness(POT.model_dump(mode="json"))
    record_verified(bank, t, POT, run, f"type:{t.type}")


def corrected(bank, expert, **kw):
    tally = Yield()

    async def collect():
        return [r async for r in corrections(bank, spec_reader(bank), expert, multiplier(6),
                                             CorrectionConfig(), tally=tally, **kw)]
    return asyncio.run(collect()), tally


def test_a_verified_correction_of_the_failing_turn_becomes_a_record(seeded_bank):
    record(seeded_bank, task(2), 6)  # failed: 12, not 14
    record(seeded_bank, task(3), 7)  # passed: nothing to correct
    expert = multiplier(7)
    records, tally = corrected(seeded_bank, expert)
    assert (tally.tried, tally.kept) == (1, 1)
    assert tally.prompt_tokens > 0 and tally.completion_tokens > 0  # the expert's cost, counted
    [only] = records
    assert only["messages"][-1]["role"] == "assistant" and "print(2 * 7)" in only["messages"][-1]["content"]
    assert only["run_id"].startswith("correction:outcome:") and only["reward"] == 1.0
    shown = expert.calls[0]["messages"][-1]["content"]  # the run so far, the failing turn, the verdict
    assert "What is 2 times 7?" in shown and "print(2 * 6)" in shown and "12" in shown


def test_a_correction_the_verifier_fails_is_not_kept_and_held_out_tasks_are_never_tried(seeded_bank):
    record(seeded_bank, task(2), 6)
    record(seeded_bank, task(4, split="final"), 6)
    held_out = ExportConfig(held_out=frozenset({"What is 4 times 7?"}))
    records, tally = corrected(seeded_bank, multiplier(5), export=held_out)
    assert records == [] and (tally.tried, tally.kept) == (1, 0)


def test_the_expert_sees_the_run_as_the_solver_saw_it(seeded_bank):
    record(seeded_bank, task(2), 6)
    [failed] = seeded_bank.solutions(None, 0.0, None)
    messages = expert_messages(POT, failed, len(failed.turns) - 1)
    assert messages[0]["role"] == "system" and POT.prompts.system[:40] in messages[1]["content"]
    assert failed.verdict in messages[1]["content"]


def test_tries_go_to_each_cluster_in_turn_and_to_its_better_arms_first():
    def run(n: int, cluster: str, harness: str) -> Solution:
        return Solution(outcome_id=n, run_id=None, harness_id=harness, cluster=cluster, task_id=str(n),
                        task_text=f"task {n}", turns=[], reward=0.0, vector=np.zeros(1, np.float32))

    class Evidence:  # the bank's mean reward per (cluster, harness)
        @staticmethod
        def cluster_stats(cluster, harness):
            return None if harness == "new" else Stats.of([1.0 if harness == "strong" else 0.0], [1], [1.0])

    newest_first = [run(6, "a", "weak"), run(5, "a", "weak"), run(4, "a", "strong"), run(3, "a", "new"),
                    run(2, "b", "weak"), run(1, "a", "strong")]
    order = [r.outcome_id for r in worth_correcting(Evidence, newest_first)]
    assert order == [4, 2, 1, 6, 5, 3]


def test_an_expert_that_writes_the_whole_fenced_turn_is_replayed_as_the_model_would_have_written_it(
        seeded_bank):
    record(seeded_bank, task(2), 6)
    fenced = ScriptedModel(lambda messages: " ```python\nprint(2 * 7)\n```\nThat prints 14.", name="fenced")
    records, tally = corrected(seeded_bank, fenced)  # the harness opens the reply with a fence itself
    assert (tally.tried, tally.kept) == (1, 1)
    assert records[0]["messages"][-1]["content"] == "```python\nprint(2 * 7)\n\n```"
