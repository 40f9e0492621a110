"""The pipeline (route → run or synthesize → execute → verify → record) with scripted models."""

import asyncio
import json
import time

from harness_bank import Outcome
from harness_bank.router import RouterConfig
from jitagent.harness.seeds import load_seeds
from jitagent.improvement.retrain import RetrainConfig, Retrainer
from jitagent.improvement.synthesis.synthesize import CandidateChecked, SynthesisConfig
from jitagent.models.base import CancelToken
from jitagent.models.scripted import ScriptedModel, instant_model
from jitagent.runtime.events import Step
from jitagent.solving.config import PipelineConfig
from jitagent.solving.events import BankDecision, Chosen, Retrieved, Routed, SolveResult
from jitagent.solving.feedback import Report
from jitagent.solving.pipeline import JitPipeline
from jitagent.tasks.task import Task
from jitagent.tasks.verifiers import Verdict

SEEDS = load_seeds()
TASK = Task(id="m1", prompt="What is 17 * 23?", type="arithmetic",
            verifier={"kind": "numeric", "expected": 391})
EDIT = json.dumps({"parent": "program_of_thought", "action": "codeact", "answer_from": "stdout",
                   "planning": "none", "tools": ["python"], "max_steps": 2})


def pipeline(bank, meta_replies=(EDIT,), solver_replies=("print(17 * 23)",), router=None, **config):
    cfg = PipelineConfig(synthesis=SynthesisConfig(n=2, dry_run=False), router=router or RouterConfig(),
                         **config)
    return JitPipeline(bank, ScriptedModel(list(meta_replies), "scripted-meta"),
                       ScriptedModel(list(solver_replies)), cfg)


def record(bank, name, reward, count, cluster="type:arithmetic", **kw):
    for i in range(count):
        bank.record_outcome(Outcome(harness_id=SEEDS[name].id, task_id=f"{name}{i}",
                                    task_text=f"What is {i} * 9 + {reward}?", reward=reward, prompt_tokens=10,
                                    completion_tokens=10, wall_s=0.1, cluster=cluster, **kw))


def test_cold_cluster_synthesizes_executes_verifies_and_records(seeded_bank):
    p = pipeline(seeded_bank, router=RouterConfig(references=13))
    events = []

    async def go():
        async for e in p.stream(TASK):
            events.append(e)
    asyncio.run(go())
    result = events[-1]
    kinds = [type(e) for e in events]
    assert kinds[0] is Retrieved and kinds[-1] is SolveResult
    assert {CandidateChecked, Routed, Chosen, Step, Verdict, BankDecision} <= set(kinds)
    assert kinds.index(Routed) < kinds.index(Chosen) < kinds.index(Step) < kinds.index(Verdict)
    decision = next(e for e in events if isinstance(e, BankDecision))
    # the cluster's first run: there is no incumbent to have kept, and the text says only what happened
    assert decision.text == "not promoted: candidate has 1 run(s), needs 3"
    assert result.route == "synthesized" and result.run.passed and result.run.answer == "391"
    assert result.harness.envelope.parent_id == SEEDS["program_of_thought"].id
    assert result.harness.envelope.generator == "scripted-meta"
    # one run is evidence for the router, not a promotion
    assert seeded_bank.incumbent("type:arithmetic") is None
    assert seeded_bank.arm_evidence(TASK.prompt, "type:arithmetic", 3)[0][0].runs == 1
    assert len(seeded_bank.candidates(TASK.prompt)) == 2  # every candidate kept, with lineage
    assert result.synthesis_cost.synthesis.completion_tokens > 0 and result.run.cost.tokens > 0


def test_tasks_without_a_type_share_a_cluster_found_by_embedding_and_route_on_its_evidence(seeded_bank):
    p = pipeline(seeded_bank)
    first = asyncio.run(p.solve(Task(id="a", prompt="What is 17 * 23? Give the number.",
                                     verifier={"kind": "numeric", "expected": 391})))
    second = asyncio.run(p.solve(Task(id="b", prompt="What is 17 * 23? Give the number only.",
                                      verifier={"kind": "numeric", "expected": 391}), execute=False))
    assert first.cluster.startswith("auto:") and second.cluster == first.cluster
    ran = {a.harness_id: a.runs for a in second.references}
    assert ran.get(first.harness.id) == 1  # the first task's harness is an arm with its outcome


def test_known_cluster_runs_its_best_harness_without_synthesis(seeded_bank):
    record(seeded_bank, "program_of_thought", 1.0, 12)
    record(seeded_bank, "direct", 0.0, 12)
    p = pipeline(seeded_bank, meta_replies=["{never called"],
                 router=RouterConfig(synth_start=0, synth_floor=0))
    result = asyncio.run(p.solve(TASK))
    assert result.route == "exploit" and result.harness.id == SEEDS["program_of_thought"].id
    assert result.synthesis is None and len(p.meta.calls) == 0 and result.run.passed
    assert result.synthesis_cost.synthesis.tokens == 0  # known zero: nothing was synthesized


def test_running_out_of_the_callers_time_is_a_zero_for_the_harness_a_cancel_is_nothing(seeded_bank):
    record(seeded_bank, "program_of_thought", 1.0, 12)
    p = pipeline(seeded_bank, router=RouterConfig(synth_start=0, synth_floor=0))
    before = seeded_bank.outcome_summary(SEEDS["program_of_thought"].id, [TASK.id])[0]
    cancelled = CancelToken()
    cancelled.cancel()
    asyncio.run(p.solve(TASK, cancel=cancelled))
    assert seeded_bank.outcome_summary(SEEDS["program_of_thought"].id, [TASK.id])[0] == before
    late = asyncio.run(p.solve(TASK, deadline=time.monotonic() - 0.01))
    assert late.run.interrupted and late.run.error
    assert seeded_bank.outcome_summary(SEEDS["program_of_thought"].id, [TASK.id])[:2] == (before + 1, 0.0)


def test_exploring_a_known_cluster_mutates_its_best_arm_from_its_recent_failures(seeded_bank):
    record(seeded_bank, "program_of_thought", 1.0, 6)
    record(seeded_bank, "program_of_thought", 0.0, 2, answer="12", trace="[model] print(3 * 4)")
    p = pipeline(seeded_bank, router=RouterConfig(synth_floor=1.0))
    p.synthesizer.config = SynthesisConfig(n=2, dry_run=True)
    result = asyncio.run(p.solve(TASK))
    # one candidate: the bandit chooses, not the meta-model's taste
    assert result.route == "synthesized" and len(result.synthesis.candidates) == 1
    prompt = p.meta.calls[0]["messages"][-1]["content"]
    assert "Recent failures of this reference" in prompt
    assert "Answer: 12" in prompt and "print(3 * 4)" in prompt
    assert prompt.count("\n- ") == 1 and "- program_of_thought:" in prompt  # the best arm is the only parent
    assert result.harness.envelope.parent_id == SEEDS["program_of_thought"].id
    assert result.synthesis_cost.dry_run.tokens == 0  # its parent ran cleanly here: no dry run


def test_no_valid_candidate_falls_back_to_the_best_arm(seeded_bank):
    p = pipeline(seeded_bank, meta_replies=["not json"], solver_replies=["Final answer: 391"])
    result = asyncio.run(p.solve(TASK, execute=False))
    assert result.route == "fallback" and result.run is None
    assert result.harness.id == max(result.references, key=lambda a: a.mean).harness_id
    assert all(c.broken_after_repair for c in result.synthesis.candidates)


def test_static_mode_and_unverified_tasks_leave_the_bank_alone(seeded_bank):
    before = seeded_bank.stats()["outcomes"]
    asyncio.run(pipeline(seeded_bank, learn=False).solve(TASK))
    asyncio.run(pipeline(seeded_bank).solve(Task(id="u", prompt="Tell me a joke.")))
    assert seeded_bank.stats()["outcomes"] == before


def test_instant_model_writes_schema_valid_edits(seeded_bank):
    p = JitPipeline(seeded_bank, instant_model(), instant_model(),
                    PipelineConfig(synthesis=SynthesisConfig(n=1, dry_run=False)))
    result = asyncio.run(p.solve(TASK, execute=False))
    assert result.route == "synthesized"


def test_a_reported_outcome_lands_on_the_run_by_its_id_or_on_a_named_harness(seeded_bank):
    p = pipeline(seeded_bank, solver_replies=("Final answer: rivers run",),
                 router=RouterConfig(synth_start=0, synth_floor=0))
    result = asyncio.run(p.solve(Task(id="u", prompt="Write a haiku about rivers.", type="poem")))
    by_run = asyncio.run(p.report_outcome(Report(1.0), run_id=result.run_id))
    assert (by_run.cluster, by_run.harness_id) == ("type:poem", result.harness.id)
    elsewhere = asyncio.run(p.report_outcome(Report(0.5, wall_s=1.0), harness_id=SEEDS["react"].id,
                                             task_text="Write a limerick.", task_type="poem"))
    assert (elsewhere.cluster, elsewhere.harness_id) == ("type:poem", SEEDS["react"].id)
    assert seeded_bank.stats()["outcomes"] == 2 and not by_run.decision.promote


def test_a_run_reported_by_its_id_counts_toward_the_adapters_next_training(seeded_bank, monkeypatch):
    """A client's report is how a stream's runs are verified: the retrainer counts it like a run verified
    here; a free-form report on a harness run elsewhere is not the server's run and does not count."""
    started = []

    async def train(self):
        started.append(self.since)
    monkeypatch.setattr(Retrainer, "_train", train)
    p = pipeline(seeded_bank, solver_replies=("Final answer: rivers run",) * 2,
                 router=RouterConfig(synth_start=0, synth_floor=0), retrain=RetrainConfig(every=2))

    async def stream():
        for n in (1, 2):
            poem = Task(id=f"u{n}", prompt=f"Write haiku number {n} about rivers.", type="poem")
            result = await p.solve(poem)
            assert p.retrainer.jobs == 0  # unverified: it waits for its report
            await p.report_outcome(Report(1.0), run_id=result.run_id)
        await p.report_outcome(Report(0.5, wall_s=1.0), harness_id=SEEDS["react"].id, task_text="A limerick.")
        await p.settle()
    asyncio.run(stream())
    assert p.retrainer.jobs == 1 and p.retrainer.since == 0
