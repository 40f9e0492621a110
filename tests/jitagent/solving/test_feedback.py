"""Feedback by run id: a pipeline run is recorded in the bank; a report lands on exactly that run and
is one outcome like any other (SQLite and PostgreSQL banks, real embedder, scripted models)."""

import asyncio

import pytest

from harness_bank import HarnessBank
from jitagent.harness.seeds import seed_bank
from jitagent.improvement.synthesis.synthesize import SynthesisConfig
from jitagent.models.scripted import ScriptedModel
from jitagent.solving.config import PipelineConfig
from jitagent.solving.feedback import FeedbackError, Report, report_harness, report_run
from jitagent.solving.pipeline import JitPipeline
from jitagent.tasks.task import Task

UNVERIFIED = Task(id="u1", prompt="Write a haiku about rivers.", type="poem")
VERIFIED = Task(
    id="v1", prompt="What is 17 * 23?", type="arithmetic", verifier={"kind": "numeric", "expected": 391}
)


def pipeline(bank) -> JitPipeline:
    solver, meta = (
        ScriptedModel(["Final answer: 391"], "scripted-solver"),
        ScriptedModel(["{}"], "scripted-meta"),
    )
    # synthesis never comes up: the harness that ran is the router's, so the test knows which
    config = PipelineConfig(
        synthesis=SynthesisConfig(n=1, dry_run=False), router={"synth_start": 0, "synth_floor": 0}
    )
    return JitPipeline(bank, meta, solver, config)


def test_an_unverified_run_has_no_reward_and_a_report_lands_on_it_once(seeded_bank):
    result = asyncio.run(pipeline(seeded_bank).solve(UNVERIFIED))
    assert result.run.reward is None and result.run.passed is None and result.bank_decision == ""
    assert seeded_bank.stats()["outcomes"] == 0  # nothing to learn from until someone says how it went

    done = report_run(seeded_bank, result.run_id, Report(0.0, "the user said: not a haiku"))
    assert (done.cluster, done.harness_id) == ("type:poem", result.harness.id)
    assert not done.decision.promote and done.incumbent_id is None  # one report (reward 0) promotes nothing
    outcome = seeded_bank.store.query("SELECT * FROM outcomes WHERE run_id = ?", (result.run_id,))[0]
    assert (outcome["task_text"], outcome["source"], outcome["verdict"]) == (
        UNVERIFIED.prompt,
        "feedback",
        "the user said: not a haiku",
    )
    assert outcome["wall_s"] == pytest.approx(result.run.cost.wall_s)  # the server's own measurement
    with pytest.raises(FeedbackError) as again:
        report_run(seeded_bank, result.run_id, Report(1.0))
    assert again.value.kind == "already_reported"


def test_three_good_reports_on_one_harness_make_the_first_incumbent(seeded_bank):
    p = pipeline(seeded_bank)
    runs = [asyncio.run(p.solve(UNVERIFIED)) for _ in range(3)]  # one task: the same draw, the same harness
    assert len({r.harness.id for r in runs}) == 1 and len({r.run_id for r in runs}) == 3
    decisions = [report_run(seeded_bank, r.run_id, Report(1.0)).decision for r in runs]
    assert [d.promote for d in decisions] == [False, False, True]


def test_a_verified_run_has_its_outcome_already(seeded_bank):
    result = asyncio.run(pipeline(seeded_bank).solve(VERIFIED))
    # whichever arm the router drew (a multi-step seed may find no answer in the script), it was verified
    assert result.run.reward is not None and result.bank_decision
    with pytest.raises(FeedbackError) as refused:
        report_run(seeded_bank, result.run_id, Report(0.0))
    assert refused.value.kind == "already_reported"


def test_unknown_runs_bad_reports_and_a_run_the_server_did_not_execute(seeded_bank):
    synthesized = asyncio.run(pipeline(seeded_bank).solve(UNVERIFIED, execute=False))
    stored = seeded_bank.stats()
    cases = [
        (report_run, ("nope", Report(1.0)), "not_found", "run_id"),
        (report_run, (synthesized.run_id, Report(1.5)), "invalid", "reward"),
        (report_run, (synthesized.run_id, Report(1.0, wall_s=float("nan"))), "invalid", "wall_s"),
        (report_run, (synthesized.run_id, Report(1.0)), "invalid", "wall_s"),  # nothing measured it
        (report_run, (synthesized.run_id, Report(1.0, "x" * 2_001, wall_s=1.0)), "invalid", "detail"),
        (report_harness, ("deadbeef", "a task", Report(1.0, wall_s=1.0)), "not_found", "harness_id"),
    ]
    for report, args, kind, field in cases:
        with pytest.raises(FeedbackError) as refused:
            report(seeded_bank, *args)
        assert (refused.value.kind, refused.value.field) == (kind, field)
    assert seeded_bank.stats() == stored
    done = report_run(
        seeded_bank, synthesized.run_id, Report(1.0, wall_s=2.5, prompt_tokens=7, completion_tokens=3)
    )
    assert done.harness_id == synthesized.harness.id


def test_runs_survive_a_restart(tmp_path, embedder):
    bank = HarnessBank(tmp_path / "bank.db", embedder=embedder)
    seed_bank(bank)
    run_id = asyncio.run(pipeline(bank).solve(UNVERIFIED)).run_id
    bank.close()
    reopened = HarnessBank(tmp_path / "bank.db", embedder=embedder)
    try:
        assert report_run(reopened, run_id, Report(1.0)).cluster == "type:poem"
    finally:
        reopened.close()


def test_a_report_by_run_id_on_a_postgresql_bank(postgres_url, embedder):
    bank = HarnessBank(postgres_url, embedder=embedder)
    try:
        seed_bank(bank)
        result = asyncio.run(pipeline(bank).solve(UNVERIFIED))
        assert report_run(bank, result.run_id, Report(1.0)).harness_id == result.harness.id
        assert bank.run(result.run_id).outcomes == 1
    finally:
        bank.close()
