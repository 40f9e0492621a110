"""Code written for a cluster, end to end with scripted models (the writer's code runs in the real sandbox):
online, the router's synthesis draw in a plateaued cluster writes code between tasks and later tasks use it;
ahead of time, `evolve --tools` labels learn tasks, writes, gates on score."""

import asyncio

from harness_bank.router import RouterConfig
from harness_bank.views import BankViews
from jitagent.harness.seeds import load_seeds
from jitagent.improvement.toolmaking import ToolmakingConfig
from jitagent.improvement.toolshop import PlateauConfig
from jitagent.models.scripted import ScriptedModel, instant_model
from jitagent.offline.evolve import Evolver
from jitagent.offline.warm import warm_bank
from jitagent.runtime.agent import Runtime
from jitagent.solving.config import PipelineConfig
from jitagent.solving.pipeline import JitPipeline
from jitagent.tasks.task import Task

SEEDS = load_seeds()
SOLVER = ("import re\ndef solve(task):\n    a, b = map(int, re.findall(r'\\d+', task)[:2])\n"
          "    return str(a + b)\n")


def adds(split: str, count: int, start: int = 0) -> list[Task]:
    return [Task(id=f"add-{split}-{i}", prompt=f"Add {i * 7 + 3} and {i * 11 + 5}.", type="add",
                 split=split, verifier={"kind": "exact", "expected": str(i * 18 + 8)})
            for i in range(start, start + count)]


def pipeline(bank, writer_replies, synthesis: float = 1.0) -> JitPipeline:
    """Every draw a synthesis draw by default: in a plateaued cluster it asks for code."""
    cfg = PipelineConfig(router=RouterConfig(synth_start=synthesis, synth_floor=synthesis),
                         toolmaking=ToolmakingConfig(stages=("solve",), candidates=1, repairs=0),
                         plateau=PlateauConfig(min_labelled=6, retry_after=1))
    return JitPipeline(bank, instant_model(), ScriptedModel(["Final answer: 0"]), cfg,
                       writer=ScriptedModel(writer_replies, "scripted-writer"))


def warm(bank, tasks: list[Task]) -> None:
    async def go():
        solver = Runtime(ScriptedModel(["Final answer: 0"]))
        async for _ in warm_bank(bank, solver, {"direct": SEEDS["direct"]}, tasks):
            pass
    asyncio.run(go())


def test_a_plateaued_cluster_gets_code_online_and_later_tasks_use_it(seeded_bank):
    warm(seeded_bank, adds("learn", 8))
    p = pipeline(seeded_bank, [f"```python\n{SOLVER}```"])
    assert len(seeded_bank.labelled_tasks("type:add")) == 8  # verified runs label their tasks

    async def go():
        first = await p.solve(adds("final", 1, start=20)[0])  # the synthesis draw asks for code instead
        await p.settle()
        routed = pipeline(seeded_bank, [], synthesis=0.0)  # then the bandit alone
        return first, [await routed.solve(task) for task in adds("final", 3, start=30)]
    first, later = asyncio.run(go())
    assert first.route in ("exploit", "explore") and first.harness.id == SEEDS["direct"].id  # meanwhile
    [attempt] = seeded_bank.code_attempts("type:add")
    assert attempt["accepted"] and attempt["completion_tokens"] > 0 and attempt["detail"]["writer"] == (
        "scripted-writer")
    tooled = seeded_bank.get(attempt["harness_id"])
    assert tooled.parent_id == SEEDS["direct"].id and tooled.origin == "synthesized"
    [why] = BankViews(seeded_bank).harness(tooled.id).acceptance  # `bank show` gives its acceptance evidence
    assert why["cluster"] == "type:add" and why["stage"] == "solve" and why["heldout"] == [1.0] * 5
    by_code = [r for r in later if r.harness.id == tooled.id]
    assert by_code and all(r.run.passed and r.run.cost.tokens == 0 for r in by_code)


def test_code_that_fails_on_held_out_tasks_never_joins_the_arms(seeded_bank):
    warm(seeded_bank, adds("learn", 8))
    p = pipeline(seeded_bank, ["```python\ndef solve(task):\n    return '26'\n```"])

    async def go():
        await p.solve(adds("final", 1, start=20)[0])
        await p.settle()
    asyncio.run(go())
    [attempt] = seeded_bank.code_attempts("type:add")
    assert not attempt["accepted"] and attempt["harness_id"] is None
    assert attempt["reason"].startswith("rejected")
    assert all(h.origin != "synthesized" or h.generator != "scripted-writer"
               for h in seeded_bank.list_harnesses())


def test_evolve_tools_labels_learn_writes_and_gates_on_score(seeded_bank, tmp_path):
    learn, score = adds("learn", 8), adds("score", 3, start=40)
    warm(seeded_bank, learn[:2])  # the best arm has run, but on two learn tasks only
    p = pipeline(seeded_bank, [f"```python\n{SOLVER}```"])
    evolver = Evolver(p, tmp_path / "evolve.jsonl")

    async def go():
        first = [s async for s in evolver.tools(learn, score)]
        again = [s async for s in evolver.tools(learn, score)]
        return first, again
    [step], again = asyncio.run(go())
    assert again == []  # resumable: a cluster done is not done twice
    assert step.accepted and step.heldout_harness == 1.0
    assert (step.gate_harness, step.gate_parent) == (1.0, 0.0)
    assert step.execution_tokens > 0 and step.writer_completion_tokens > 0  # labelling runs and the writer
    assert len(seeded_bank.labelled_tasks("type:add")) == 8  # the six learn tasks it had not run, labelled
    labelled = seeded_bank.latest_outcomes(SEEDS["direct"].id, "type:add", [t.id for t in learn])
    assert set(labelled) == {t.id for t in learn}
    assert not any(seeded_bank.has_outcome(h.id, t.id) for h in seeded_bank.list_harnesses() for t in score)
