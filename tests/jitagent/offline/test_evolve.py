"""`Evolver` with scripted models on a tiny suite: mutate, accept on a minibatch, gate on score, resume."""

import asyncio
import json

from harness_bank.router import RouterConfig
from jitagent.harness.seeds import load_seeds
from jitagent.models.scripted import ScriptedModel
from jitagent.offline.evolve import Evolver
from jitagent.offline.warm import warm_bank
from jitagent.runtime.agent import Runtime
from jitagent.solving.config import PipelineConfig
from jitagent.solving.pipeline import JitPipeline
from jitagent.tasks.task import Task

SEEDS = load_seeds()
HINT = "Check the units before answering."


def tasks(kind: str, split: str, count: int) -> list[Task]:
    return [Task(id=f"{split}-{kind}-{i}", prompt=f"{kind} question number {i} of the {split} set", type=kind,
                 split=split, verifier={"kind": "numeric", "expected": 7}) for i in range(count)]


def edit(messages) -> str:
    """The meta-model: a helpful instruction for `add` tasks, a useless variant for `echo` tasks."""
    useful = "add question" in messages[-1]["content"]
    return json.dumps({"parent": "direct", "action": "direct", "answer_from": "text", "planning": "none",
                       "tools": [], "max_steps": 1, "instruction": HINT if useful else "Be brief."})


def test_a_variant_is_kept_only_if_it_wins_on_the_minibatch_and_holds_on_score(seeded_bank, tmp_path):
    solver = ScriptedModel(lambda m: "Final answer: 7" if HINT in m[0]["content"] else "Final answer: 3")
    pipeline = JitPipeline(seeded_bank, ScriptedModel(edit, "scripted-meta"), solver,
                           PipelineConfig(router=RouterConfig()))
    learn = tasks("add", "learn", 6) + tasks("echo", "learn",
                                             6)  # 3 failures shown, 3 unseen for the minibatch
    score = tasks("add", "score", 2) + tasks("echo", "score", 2)

    async def go():
        async for _ in warm_bank(seeded_bank, Runtime(solver), {"direct": SEEDS["direct"]}, learn):
            pass
        evolver = Evolver(pipeline, tmp_path / "evolve.jsonl", minibatch=3)
        first = [s async for s in evolver.run(learn, score, rounds=1)]
        again = [s async for s in evolver.run(learn, score, rounds=1)]
        return first, again
    steps, again = asyncio.run(go())
    by_cluster = {s.cluster: s for s in steps}
    add, echo = by_cluster["type:add"], by_cluster["type:echo"]
    assert add.accepted and add.variant_reward == 1.0 and add.parent_reward == 0.0 and add.gate_variant == 1.0
    assert not echo.accepted and "not better on the minibatch" in echo.reason and echo.gate_variant is None
    variant = next(h for h in seeded_bank.list_harnesses(origin="evolved") if h.name == add.variant)
    assert seeded_bank.outcome_summary(variant.id, add.minibatch)[:2] == (3, 1.0)  # kept: learn evidence
    assert seeded_bank.outcome_summary(variant.id, [t.id for t in score])[0] == 0  # score never stored
    assert len(seeded_bank.list_harnesses(origin="evolved")) == 2  # the rejected one stays a candidate
    assert again == []  # resumed: every (round, cluster) step already done
    assert not set(add.minibatch) & {t.id for t in learn[:6] if t.prompt in {
        f["task_text"] for f in seeded_bank.failures("type:add", SEEDS["direct"].id)}}  # no task it saw


def test_evolve_and_the_adapters_gate_refuse_a_final_task_whoever_calls_them(seeded_bank, tmp_path):
    """The guard is in the code, not in its callers: a `final` task given as learn or score is refused before
    anything runs."""
    import pytest

    from harness_bank.adapters import AdapterRecord
    from jitagent.improvement.training.gate import gate

    model = ScriptedModel(["Final answer: 7"])
    pipeline = JitPipeline(seeded_bank, model, model, PipelineConfig())
    evolver = Evolver(pipeline, tmp_path / "evolve.jsonl")
    learn, final = tasks("add", "learn", 2), tasks("add", "final", 1)

    async def drain(stream):
        return [item async for item in stream]
    for stream in (evolver.run(learn, final, rounds=1), evolver.tools(learn + final, [])):
        with pytest.raises(ValueError, match="evolve never reads the held-out split: 1 final task"):
            asyncio.run(drain(stream))
    assert not (tmp_path / "evolve.jsonl").exists()
    adapter = AdapterRecord.__new__(AdapterRecord)
    with pytest.raises(ValueError, match="the gate never reads the held-out split"):
        asyncio.run(drain(gate(seeded_bank, Runtime(model), adapter, learn + final, 30.0)))
