"""Free variants: an arm shown its cluster's solutions first, then the arm with the bank's adapter of the
solver's base model, each once, as arms of their own that run with what they offer (the real bank and sandbox;
a scripted solver whose calls say which adapter they ran with)."""

import asyncio
import json

import pytest

from harness_bank.router import RouterConfig
from jitagent.harness.seeds import spec_reader
from jitagent.harness.spec import parse_spec
from jitagent.improvement.adapters import AdapterUnavailable, adapter_dir, adapter_variant, resolve
from jitagent.improvement.variants import free_variant
from jitagent.models.scripted import ScriptedModel
from jitagent.solving.config import PipelineConfig
from jitagent.solving.pipeline import JitPipeline

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
    assert result.route == "variant" and result.harness.adapter == adapter.id
    assert result.harness.envelope.parent_id == VARIANT.id and result.run.passed
    assert model.calls[-1]["model"] == f"scripted@{adapter.id}"  # the solver ran with the adapter
    served = resolve(seeded_bank, adapter.id)
    assert served.path.read_bytes() == b"GGUF weights" and served.path.parent == adapter_dir()


def test_the_examples_variant_comes_first_and_a_refused_foreign_or_other_pools_adapter_never(seeded_bank):
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
    theirs = seeded_bank.add_adapter(gguf=b"pool a", peft=b"zip", name="a",
                                     **LINEAGE | {"stats": {"pool": "a"}})
    for cluster, offered in (("a/type:times", theirs.id), ("b/type:times", None), ("type:times", None)):
        found = free_variant(seeded_bank, spec_of, POT, {VARIANT.id}, task(2), cluster, "scripted")
        assert (found and found[0].adapter) == offered  # trained on pool a's runs: pool a's clusters only


def test_a_gate_records_its_variants_reward_only_never_a_score_task_to_learn_from(seeded_bank, monkeypatch,
                                                                                  tmp_path):
    from jitagent.improvement.training.export import ExportConfig, sft_records
    from jitagent.improvement.training.gate import Gate, gate
    from jitagent.runtime.agent import Runtime

    monkeypatch.setenv("JITAGENT_CACHE", str(tmp_path / "cache"))
    model = solver()
    solved(seeded_bank, POT, task(1), model)  # the cluster's best arm
    adapter = seeded_bank.add_adapter(gguf=b"weights", peft=b"zip", name="times", **LINEAGE)
    score = [task(n, split="score") for n in (2, 3)]
    state = Gate()

    async def run():
        return [u async for u in gate(seeded_bank, Runtime(model), adapter, score, 30.0, state)]
    units = asyncio.run(run())
    assert [(u.parent_reward, u.variant_reward) for u in units] == [(1.0, 1.0), (1.0, 1.0)]
    assert seeded_bank.adapter(adapter.id).gate["accepted"] and state.verdict()["tokens"] > 0
    variant = adapter_variant(POT, adapter)
    assert seeded_bank.outcome_summary(variant.id, [t.id for t in score])[0] == 2  # its evidence
    learned = list(sft_records(seeded_bank, spec_reader(seeded_bank), ExportConfig()))
    assert learned and not any(t.prompt in json.dumps(r) for r in learned for t in score)
    assert {t["id"] for t in seeded_bank.labelled_tasks("type:times")} == {"t1"}  # no score task labelled


def test_an_adapter_of_another_base_model_or_not_in_the_bank_is_refused_in_one_line(seeded_bank):
    from jitagent.improvement.adapters import AdapterUnavailable, solver_for

    foreign = seeded_bank.add_adapter(gguf=b"other", peft=b"zip", name="x",
                                      **LINEAGE | {"base_model": "smollm2-135m"})
    with pytest.raises(AdapterUnavailable, match="of smollm2-135m; this solver is scripted"):
        solver_for(seeded_bank, solver(), adapter_variant(POT, foreign))
    missing = POT.model_dump(mode="json") | {"adapter": "0" * 16}
    with pytest.raises(AdapterUnavailable, match="which is not in the bank"):
        solver_for(seeded_bank, solver(), parse_spec(missing))


def test_a_synthesis_never_names_weights_of_its_own(tmp_path):
    from jitagent.harness.seeds import resolve_harness
    from jitagent.improvement.synthesis.validate import Ceilings, validate_static

    spec = POT.model_dump(mode="json") | {"adapter": "f" * 16}
    checked = asyncio.run(validate_static(json.dumps({"spec": spec}), {POT.name: POT}, task(1), Ceilings()))
    assert checked.ok and checked.spec.adapter is None and any("no parent's" in n for n in checked.notes)
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    with pytest.raises(ValueError, match="runs with adapter f{16}, which lives in a bank"):
        resolve_harness(str(path))


@pytest.mark.parametrize(("column", "value", "said"), [
    ("sha256", "../../../../tmp/evil", "is not one"),  # it would name the file written
    ("gguf", b"altered weights", "do not match its sha256"),
])
def test_an_adapter_whose_row_was_altered_is_refused_and_nothing_is_written(seeded_bank, monkeypatch,
                                                                           tmp_path, column, value, said):
    """A bank row names the adapter's file and holds its bytes (issue 45): a sha256 that is not one, or
    bytes that do not hash to it, are refused before anything reaches the disk."""
    monkeypatch.setenv("JITAGENT_CACHE", str(tmp_path / "cache"))
    adapter = seeded_bank.add_adapter(gguf=b"GGUF weights", peft=b"zip", name="times", **LINEAGE)
    with seeded_bank.store.transaction() as db:
        db.execute(f"UPDATE adapters SET {column} = ? WHERE id = ?", (value, adapter.id))
    with pytest.raises(AdapterUnavailable, match=said):
        resolve(seeded_bank, adapter.id)
    assert not adapter_dir().exists() or not any(adapter_dir().iterdir())
