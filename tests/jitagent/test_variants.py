"""Free variants: an arm shown its cluster's solutions first, then the arm with the bank's adapter of the
solver's base model, each once, as arms of their own that run with what they offer (the real bank and sandbox;
a scripted solver whose calls say which adapter they ran with)."""

import asyncio

from harness_bank.router import RouterConfig
from jitagent.adapters import adapter_dir, adapter_variant, resolve
from jitagent.catalog import spec_reader
from jitagent.models.scripted import ScriptedModel
from jitagent.pipeline import JitPipeline, PipelineConfig
from jitagent.variants import free_variant

from .test_examples import POT, VARIANT, solved, solver, task

LINEAGE = {"base_model": "scripted", "base_digest": "b" * 64, "data_digest": "d" * 64, "parent_id": None,
           "config": {}, "stats": {}}


def explorer(bank, model) -> JitPipeline:
    """A pipeline whose every draw in a known cluster explores by mutation."""
    return JitPipeline(bank, ScriptedModel(["not called"]), model, PipelineConfig(router=RouterConfig(
        synth_start=1, synth_floor=1, references=1)))


def test_an_adapter_variant_is_an_arm_of_its_own_whose_solver_runs_with_the_adapter(seeded_bank, monkeypatch,
                                                                                   tmp_path):
    monkeypatch.setenv("JITAGENT_CACHE", str(tmp_path / "cache"))
    model = solver(wrong=frozenset({1, 4}))
    adapter = seeded_bank.add_adapter(gguf=b"GGUF weights", peft=b"zip", name="times", **LINEAGE)
    variant = adapter_variant(POT, adapter)
    assert variant.adapter == adapter.id and variant.envelope.parent_id == POT.id
    assert variant.id != POT.id and POT.adapter is None
    solved(seeded_bank, POT, task(1), model)
    for n in (2, 4):  # the examples variant is an arm already, the best, not at the ceiling
        solved(seeded_bank, VARIANT, task(n), model)
    result = asyncio.run(explorer(seeded_bank, model).solve(task(3)))
    assert result.route == "synthesized" and result.harness.adapter == adapter.id
    assert result.harness.envelope.parent_id == VARIANT.id and result.run.passed
    assert model.calls[-1]["model"] == f"scripted@{adapter.id}"  # the solver ran with the adapter
    served = resolve(seeded_bank, adapter.id)
    assert served.path.read_bytes() == b"GGUF weights" and served.path.parent == adapter_dir()


def test_the_examples_variant_comes_first_and_a_refused_or_foreign_adapter_never(seeded_bank):
    model = solver()
    solved(seeded_bank, POT, task(1), model)
    spec_of = spec_reader(seeded_bank)
    first = free_variant(seeded_bank, spec_of, POT, set(), task(2), "type:times", "scripted")
    assert first is not None and first[0].id == VARIANT.id  # a solution to show: examples first
    other = seeded_bank.add_adapter(gguf=b"another base", peft=b"zip", name="x",
                                    **LINEAGE | {"base_model": "smollm2-135m"})
    assert free_variant(seeded_bank, spec_of, POT, {VARIANT.id}, task(2), "type:times", "scripted") is None
    refused = seeded_bank.add_adapter(gguf=b"refused", peft=b"zip", name="y", **LINEAGE)
    seeded_bank.set_adapter_gate(refused.id, {"accepted": False})
    assert free_variant(seeded_bank, spec_of, POT, {VARIANT.id}, task(2), "type:times", "scripted") is None
    assert other.usable and not seeded_bank.adapter(refused.id).usable
