"""Examples: a cluster's verified solutions shown to its later tasks (the real bank and sandbox; a scripted
solver whose program is right or wrong as a test needs it)."""

import asyncio
import random
import re

import numpy as np
import pytest
from pydantic import ValidationError

from harness_bank import Outcome
from harness_bank.records import Solution
from harness_bank.router import RouterConfig
from jitagent.harness.seeds import load_seeds, spec_reader
from jitagent.harness.spec import ExamplesSpec
from jitagent.improvement.examples import examples_for, pick, with_examples
from jitagent.improvement.recording import record_verified
from jitagent.models.scripted import ScriptedModel
from jitagent.offline.warm import warm_bank, with_examples_variants
from jitagent.runtime.agent import Runtime
from jitagent.runtime.events import Step, solution_turns
from jitagent.solving.config import PipelineConfig
from jitagent.solving.events import Chosen, SolveResult
from jitagent.solving.feedback import Report
from jitagent.solving.pipeline import JitPipeline
from jitagent.tasks.task import Task

SEEDS = load_seeds()
POT = SEEDS["program_of_thought"]
VARIANT = with_examples(POT)
CLUSTER = "type:times"


def task(n: int, split: str | None = None, verified: bool = True, prompt: str | None = None) -> Task:
    verifier = {"kind": "numeric", "expected": n * 7} if verified else {"kind": "none"}
    return Task(id=f"t{n}", prompt=prompt or f"What is {n} times 7?", type="times", split=split,
                verifier=verifier)


def solver(wrong: frozenset[int] = frozenset()) -> ScriptedModel:
    """Writes the program for the task in the last user message (wrong for the numbers in `wrong`)."""
    def reply(messages):
        n = int(re.findall(r"What is (\d+) times", messages[-2]["content"])[-1])
        return f"print({n} * {0 if n in wrong else 7})"
    return ScriptedModel(reply)


def solved(bank, spec, t: Task, model: ScriptedModel, examples=()) -> None:
    run = asyncio.run(Runtime(model).run(spec, t, examples=examples))
    bank.add_harness(spec.model_dump(mode="json"))
    record_verified(bank, t, spec, run, CLUSTER)


def test_a_spec_without_examples_digests_as_before_and_a_variant_is_an_arm_of_its_own():
    assert POT.id == "c21161114baa059c"  # as before examples existed (re-pinned: its few-shot changed)
    assert "examples" not in POT.model_dump()["prompts"]
    assert VARIANT.id != POT.id and VARIANT.envelope.parent_id == POT.id
    assert (VARIANT.name, VARIANT.envelope.origin, VARIANT.prompts.examples) == (
        "program_of_thought+ex2", "evolved", ExamplesSpec())
    assert with_examples(POT, ExamplesSpec(k=1, pick="random")).name == "program_of_thought+ex1-random"
    with pytest.raises(ValidationError, match="examples needs action.samples 1"):
        with_examples(SEEDS["self_consistency"])


def test_a_solution_is_the_last_conversation_and_none_where_code_answered():
    events = [Step(kind="model", text="first try", step=0), Step(kind="tool", text="error", step=0),
              Step(kind="model", text="sub", step=0, depth=1),
              Step(kind="model", text="again", step=0), Step(kind="tool", text="out", step=0),
              Step(kind="model", text="fixed", step=1), Step(kind="tool", text="42", step=1)]
    assert solution_turns(events) == [{"role": "assistant", "content": "again"},
                                      {"role": "user", "content": "Observation:\nout"},
                                      {"role": "assistant", "content": "fixed"}]
    assert solution_turns([Step(kind="tool", tool="solve", text="42")]) is None


def test_only_verified_runs_of_the_same_format_are_shown_and_never_the_task_itself(seeded_bank):
    model = solver(wrong=frozenset({2}))
    for n in (1, 2, 3):
        solved(seeded_bank, POT, task(n), model)  # t2 fails its verifier: reward 0
    solved(seeded_bank, SEEDS["direct"], task(4), ScriptedModel(["28"]))  # another format
    shown = examples_for(seeded_bank, spec_reader(seeded_bank), VARIANT, task(1), CLUSTER)
    assert len(shown.sources) == 1  # t3 only: t1 is the task itself, t2 failed, t4 is not a program
    assert shown.evidence == (f"verifier:{task(3).verifier.kind}",)  # what admitted it
    assert "What is 3 times 7?" in shown.messages[0]["content"]
    assert shown.messages[1]["content"].startswith("```python\nprint(3 * 7)")
    same_text = task(9, prompt="What is 3 times 7?")
    shown = examples_for(seeded_bank, spec_reader(seeded_bank), VARIANT, same_text, CLUSTER)
    assert [m["content"] for m in shown.messages if m["role"] == "user"] == ["What is 1 times 7?"]
    assert examples_for(seeded_bank, spec_reader(seeded_bank), POT, task(5), CLUSTER).sources == ()


def test_an_unverified_run_is_shown_only_once_a_report_verifies_it(seeded_bank):
    seeded_bank.record_outcome(Outcome(harness_id=POT.id, task_id="t0", task_text="What is 0 times 7?",
                                       reward=1.0, prompt_tokens=5, completion_tokens=5, wall_s=0.1,
                                       cluster=CLUSTER))  # no solution kept: the cluster's one arm
    pipeline = JitPipeline(seeded_bank, ScriptedModel(["{}"]), solver(), PipelineConfig(router=RouterConfig(
        synth_start=0, synth_floor=0, references=1)))
    result = asyncio.run(pipeline.solve(task(6, verified=False)))
    assert result.run.solution is not None
    assert seeded_bank.solutions(result.cluster, 1.0, None) == []
    asyncio.run(pipeline.report_outcome(Report(reward=0.5), run_id=result.run_id))
    assert seeded_bank.solutions(result.cluster, 1.0, None) == []  # below the threshold
    assert [s.run_id for s in seeded_bank.solutions(result.cluster, 0.5, None)] == [result.run_id]


def test_a_stream_shows_earlier_tasks_solutions_prequentially(seeded_bank):
    model = solver()
    for n in (1, 2):  # the variant is the cluster's only arm with evidence
        solved(seeded_bank, VARIANT, task(n), model)
    pipeline = JitPipeline(seeded_bank, ScriptedModel(["{}"]), model,
                           PipelineConfig(router=RouterConfig(synth_start=0, synth_floor=0, references=1)))

    async def go(t):
        return [e async for e in pipeline.stream(t)]
    events = asyncio.run(go(task(3)))
    chosen = next(e for e in events if isinstance(e, Chosen))
    result = events[-1]
    assert isinstance(result, SolveResult) and result.harness.id == VARIANT.id and result.run.passed
    assert len(chosen.examples) == 2 and chosen.examples == result.examples
    asked = model.calls[-1]["messages"]
    users = [m["content"] for m in asked if m["role"] == "user"]
    assert users == ["What is 2 times 7?", "What is 1 times 7?", "What is 3 times 7?"]
    assert result.run.cost.prompt_tokens > 40  # the examples are in the run's tokens
    again = asyncio.run(go(task(3, prompt="What is 3 times 7?") .model_copy(update={"id": "t3-again"})))
    assert result.run_id not in again[-1].examples  # never a task's own solution, nor one of the same text


def test_the_warm_up_shows_other_learn_tasks_and_never_reads_final(seeded_bank):
    model = solver()
    learn = [task(n, split="learn") for n in (1, 2, 3)]
    specs = with_examples_variants({"program_of_thought": POT, "self_consistency": SEEDS["self_consistency"]})
    assert list(specs) == ["program_of_thought", "self_consistency", "program_of_thought+ex2"]

    async def go(tasks, which):
        return [u async for u in warm_bank(seeded_bank, Runtime(model), which, tasks)]
    units = asyncio.run(go(learn, {k: specs[k] for k in ("program_of_thought", "program_of_thought+ex2")}))
    shown = [u for u in units if u.name.endswith("+ex2")]
    assert len(shown) == 3 and all(u.recorded and u.run.passed for u in units)
    for call in list(model.calls)[-3:]:
        users = [m["content"] for m in call["messages"] if m["role"] == "user"]
        assert len(users) == 3 and users[-1] not in users[:-1]  # two other learn tasks, then the task
    with pytest.raises(ValueError, match="never reads the held-out split"):
        asyncio.run(go([task(9, split="final")], {"program_of_thought": POT}))


def test_pick_nearest_diverse_and_random():
    def solution(i, vector):
        return Solution(outcome_id=i, run_id=f"r{i}", harness_id="h", cluster="c", task_id=f"t{i}",
                        task_text=f"task {i}", turns=[], reward=1.0,
                        vector=np.array(vector, dtype=np.float32))
    query = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    # 0 and 1 are near the task and near-duplicates of each other; 2 is a little farther and unlike them
    near = [solution(0, [0.9, 0.436, 0]), solution(1, [0.89, 0.456, 0]), solution(2, [0.85, 0, 0.527]),
            solution(3, [0, 1, 0])]
    ids = lambda chosen: [s.outcome_id for s in chosen]  # noqa: E731
    assert ids(pick(near, query, ExamplesSpec(k=2, pick="nearest"), random.Random(0))) == [1, 0]
    assert ids(pick(near, query, ExamplesSpec(k=2, pick="diverse"), random.Random(0))) == [2, 0]
    assert len(set(ids(pick(near, query, ExamplesSpec(k=3, pick="random"), random.Random(0))))) == 3


def test_the_first_mutation_of_an_arm_with_solutions_is_its_variant_and_costs_no_meta_call(seeded_bank):
    model = solver(wrong=frozenset({2}))
    for n in (1, 2):
        solved(seeded_bank, POT, task(n), model)  # a failure to learn from, a solution to show
    meta = ScriptedModel(["not called"])
    pipeline = JitPipeline(seeded_bank, meta, model, PipelineConfig(router=RouterConfig(
        synth_start=1, synth_floor=1, references=1)))
    result = asyncio.run(pipeline.solve(task(3)))
    assert result.route == "variant" and result.harness.id == VARIANT.id and not meta.calls
    assert result.run.passed and len(result.examples) == 1


def test_solutions_read_the_same_on_postgresql(tmp_path, postgres_url, embedder):
    from harness_bank import HarnessBank
    from jitagent.harness.seeds import seed_bank

    banks = [HarnessBank(tmp_path / "bank.db", embedder=embedder),
             HarnessBank(postgres_url, embedder=embedder)]
    for bank in banks:
        seed_bank(bank)
        bank.record_outcome(Outcome(harness_id=POT.id, task_id="t1", task_text="What is 1 times 7?",
                                    reward=1.0, prompt_tokens=5, completion_tokens=5, wall_s=0.1,
                                    cluster=CLUSTER, solution=[{"role": "assistant", "content": "print(7)"}]))
    sqlite, postgres = ([(s.task_id, s.turns, s.vector.tolist()) for s in b.solutions(CLUSTER, 1.0, None)]
                        for b in banks)
    assert sqlite == postgres and len(sqlite) == 1
    for bank in banks:
        bank.close()


def test_bank_show_lists_a_harness_s_example_settings(seeded_bank, tmp_path, capsys):
    from jitagent.cli.main import main

    seeded_bank.add_harness(VARIANT.model_dump(mode="json"))
    seeded_bank.close()
    assert main(["bank", "show", VARIANT.name, "--bank", str(tmp_path / "bank.db")]) == 0
    shown = capsys.readouterr().out
    assert "examples:\n    k: 2\n    min_reward: 1.0\n    max_chars: 800\n    pick: diverse" in shown, shown
