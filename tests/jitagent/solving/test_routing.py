"""Routing decided in one function: the whole decision — the arm, a free variant, a synthesis and its
parent's failures — comes from `Routing.decide`, and the pipeline only carries it out (the real bank)."""

from harness_bank.router import RouterConfig
from jitagent.harness.seeds import load_seeds
from jitagent.models.scripted import ScriptedModel
from jitagent.solving.config import PipelineConfig
from jitagent.solving.pipeline import JitPipeline
from jitagent.tasks.task import ClientTool

from ..improvement.test_examples import POT, VARIANT, solved, solver, task


def routing(bank, **router):
    model = solver(wrong=frozenset({2}))
    return JitPipeline(bank, ScriptedModel(["not called"]), model, PipelineConfig(router=RouterConfig(
        **({"references": 1} | router)))).routing, model


def test_a_cold_cluster_is_written_for_from_its_references(seeded_bank):
    decide, _ = routing(seeded_bank, synth_start=1, synth_floor=1)
    decision = decide.decide(task(1), seed=0)
    assert (decision.route, decision.spec, decision.failures) == ("synthesized", None, [])
    assert decision.choice.arm is None and decision.arms


def test_a_mutation_draw_with_a_free_variant_on_offer_runs_the_variant_not_the_meta_model(seeded_bank):
    decide, model = routing(seeded_bank, synth_start=1, synth_floor=1)
    for n in (1, 2):
        solved(seeded_bank, POT, task(n), model)  # a failure to learn from, a solution to show
    decision = decide.decide(task(3), seed=0)
    assert decision.route == "variant" and decision.spec.id == VARIANT.id
    assert decision.text.startswith(f"variant (mutation of {POT.name};") and not decision.failures


def test_a_mutation_draw_without_a_free_variant_is_a_synthesis_shown_the_parents_failures(seeded_bank):
    decide, model = routing(seeded_bank, synth_start=1, synth_floor=1)
    for n in (1, 2):
        solved(seeded_bank, POT, task(n), model)
    solved(seeded_bank, VARIANT, task(2), model)  # the variant is an arm already (and failed): none is free
    decision = decide.decide(task(3), seed=0)
    assert decision.route == "synthesized" and decision.spec is None and decision.choice.arm is not None
    assert decision.failures and all(f["task_text"] != task(3).prompt for f in decision.failures)
    # a task whose text failed before is never shown its own verdict ("expected …") in a mutation
    shown = seeded_bank.failures(decision.cluster, POT.id, 3, besides=task(2).prompt)
    assert [f["task_text"] for f in seeded_bank.failures(decision.cluster, POT.id, 3)] == [task(2).prompt]
    assert shown == []  # the one failure was of that very text


def test_without_exploring_the_best_arm_runs_and_says_why(seeded_bank):
    decide, model = routing(seeded_bank, synth_start=0, synth_floor=0)
    for n in (1, 3):
        solved(seeded_bank, POT, task(n), model)
    decision = decide.decide(task(4), seed=0)
    assert decision.route in ("exploit", "explore") and decision.spec is not None
    assert decision.text.startswith(f"{decision.route} {decision.spec.name} in {decision.cluster}:")


def test_a_confined_pipeline_never_routes_to_a_harness_that_carries_code(seeded_bank):
    """Where runs cannot be confined (JitPipeline.confine) a code section would run as the server: an arm
    that carries one, however well it did, is not drawn."""
    from jitagent.harness.spec import parse_spec

    data = POT.model_dump(mode="json")
    data["code"] = [{"stage": "solve", "source": "def solve(task):\n    return None\n"}]
    coded = parse_spec(data).derive(origin="evolved", parent_id=POT.id, generator="test")
    seeded_bank.add_harness(coded.model_dump(mode="json"))
    pipeline = JitPipeline(seeded_bank, ScriptedModel(["not called"]), solver(), PipelineConfig(
        router=RouterConfig(references=1, synth_start=0, synth_floor=0)))
    for n in (1, 3, 4):
        solved(seeded_bank, coded, task(n), pipeline.solver)
    assert pipeline.routing.decide(task(5), seed=0).spec.id == coded.id  # the best arm, where code may run
    pipeline.confine()
    decision = pipeline.routing.decide(task(5), seed=0)
    assert coded.id not in {a.harness_id for a in decision.arms}  # not even among the arms weighed
    assert decision.spec is None or not decision.spec.code_sections
    assert not (pipeline.config.online_tools or pipeline.config.synthesis.dry_run)


def test_a_task_with_the_clients_functions_weighs_the_model_as_served_and_no_other_task_does(seeded_bank):
    """`plain` hands the client's functions to the model's own template: an arm of every task that carries
    them, retrieved or not, and of no task without them, however many references are weighed."""
    plain = load_seeds()["plain"].id
    narrow, _ = routing(seeded_bank)
    calls = task(1).model_copy(update={"client_tools": [ClientTool(name="get_total")]})
    assert plain in {a.harness_id for a in narrow.decide(calls, seed=0).arms}
    assert plain not in {a.harness_id for a in narrow.decide(task(1), seed=0).arms}
    wide, _ = routing(seeded_bank, references=13)  # the most there may be, every other seed among them
    weighed = {a.harness_id for a in wide.decide(task(1), seed=0).arms}
    assert plain not in weighed and len(weighed) == len(load_seeds()) - 1  # nor does it take a place


def test_a_task_with_the_clients_functions_measures_the_model_as_served_first_in_its_cluster(seeded_bank):
    plain = load_seeds()["plain"]
    decide, _ = routing(seeded_bank, synth_start=1, synth_floor=1)  # every draw would be a synthesis
    calls = [task(n).model_copy(update={"client_tools": [ClientTool(name="get_total")]}) for n in (1, 2)]
    first = decide.decide(calls[0], seed=0)
    assert (first.route, first.spec.id) == ("explore", plain.id) and "a baseline" in first.text
    solved(seeded_bank, plain, calls[0], ScriptedModel(["7"]))
    assert "a baseline" not in decide.decide(calls[1], seed=0).text  # measured once: the draws take over
