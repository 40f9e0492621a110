"""The pipeline (route → retrieve → synthesize → execute → verify → admit) with scripted models."""

import asyncio
import json

from harness_bank import Outcome
from jitagent.catalog import load_seeds
from jitagent.models.scripted import ScriptedModel, instant_model
from jitagent.pipeline import JitPipeline, PipelineConfig
from jitagent.synthesis.synthesize import SynthesisConfig
from jitagent.tasks import Task

SEEDS = load_seeds()
TASK = Task(id="m1", prompt="What is 17 * 23?", type="arithmetic", verifier={"kind": "numeric", "expected": 391})
EDIT = json.dumps({"parent": "program_of_thought", "action": "codeact", "answer_from": "stdout", "planning": "none",
                   "tools": ["python"], "max_steps": 2})


def pipeline(bank, meta_replies=(EDIT,), solver_replies=("print(17 * 23)",), **config):
    cfg = PipelineConfig(synthesis=SynthesisConfig(n=2, dry_run=False), **config)
    return JitPipeline(bank, ScriptedModel(list(meta_replies), "scripted-meta"), ScriptedModel(list(solver_replies)), cfg)


def test_synthesize_execute_verify_admit(seeded_bank):
    p = pipeline(seeded_bank, k=13)
    events = []

    async def go():
        async for e in p.stream(TASK):
            events.append(e)
    asyncio.run(go())
    result = events[-1].data["result"]
    kinds = [e.kind for e in events]
    assert kinds[0] == "retrieved" and kinds[-1] == "result" and "bank" in kinds
    assert result.route == "synthesized" and result.run.passed and result.run.answer == "391"
    assert result.harness.envelope.parent_id == SEEDS["program_of_thought"].id
    assert result.harness.envelope.generator == "scripted-meta"
    assert seeded_bank.incumbent("type:arithmetic")["harness_id"] == result.harness.id
    assert len(seeded_bank.candidates(TASK.prompt)) == 2  # every candidate kept, with lineage
    assert result.synthesis_cost.synthesis.completion_tokens > 0 and result.run.cost.tokens > 0


def test_confident_incumbent_is_reused_without_synthesis(seeded_bank):
    pot = SEEDS["program_of_thought"].id
    for i in range(5):
        seeded_bank.record_outcome(Outcome(pot, f"x{i}", f"What is {i} * 9?", 1.0, 10, 10, 0.1, cluster="type:arithmetic"))
    p = pipeline(seeded_bank, meta_replies=["{never called"])
    result = asyncio.run(p.solve(TASK))
    assert result.route == "reused" and result.harness.id == pot and result.synthesis is None
    assert len(p.meta.calls) == 0 and result.run.passed


def test_no_valid_candidate_falls_back_to_best_reference(seeded_bank):
    p = pipeline(seeded_bank, meta_replies=["not json"], solver_replies=["Final answer: 391"])
    result = asyncio.run(p.solve(TASK, execute=False))
    assert result.route == "fallback" and result.run is None
    assert result.harness.id == result.references[0]["harness_id"]
    assert all(c.broken_after_repair for c in result.synthesis.candidates)


def test_static_mode_and_unverified_tasks_leave_the_bank_alone(seeded_bank):
    before = seeded_bank.stats()["outcomes"]
    asyncio.run(pipeline(seeded_bank, learn=False).solve(TASK))
    asyncio.run(pipeline(seeded_bank).solve(Task(id="u", prompt="Tell me a joke.")))
    assert seeded_bank.stats()["outcomes"] == before


def test_instant_model_writes_schema_valid_edits(seeded_bank):
    p = JitPipeline(seeded_bank, instant_model(), instant_model(), PipelineConfig(synthesis=SynthesisConfig(n=1, dry_run=False)))
    result = asyncio.run(p.solve(TASK, execute=False))
    assert result.route == "synthesized"
