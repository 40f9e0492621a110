"""Online retraining: after `every` verified runs the pipeline trains the solver's adapter in the background
(a real `jitagent train` process on the real bank, SmolLM2-135M's weights), and the adapter then enters the
cluster's arms as a free variant. The solver that answers is scripted under SmolLM2's name, so the stream's
programs are right; what is trained is real."""

import asyncio
import os

import pytest

from jitagent.harness.seeds import spec_reader
from jitagent.improvement.retrain import NAME, RetrainConfig
from jitagent.improvement.variants import free_variant
from jitagent.models.scripted import ScriptedModel
from jitagent.solving.config import PipelineConfig
from jitagent.solving.pipeline import JitPipeline

from .test_examples import POT, VARIANT, solved, solver, task

pytestmark = pytest.mark.slow


def test_verified_runs_retrain_the_adapter_in_the_background_and_it_becomes_an_arm(seeded_bank):
    model = ScriptedModel(solver()._replies, name="smollm2-135m")
    for n in (7, 8):  # the cluster's program harness has solved two tasks: something to learn from
        solved(seeded_bank, POT, task(n), model)
    retrain = RetrainConfig(every=3, args=("--rank", "4", "--epochs", "1", "--accumulate", "1"))
    pipeline = JitPipeline(seeded_bank, ScriptedModel(["not called"]), model, PipelineConfig(retrain=retrain))

    async def stream():
        for n in (1, 2):
            await pipeline.solve(task(n))
        assert pipeline.retrainer.jobs == 0
        await pipeline.solve(task(3))  # the third verified run: a job starts, the stream goes on
        assert pipeline.retrainer.jobs == 1
        await pipeline.settle()

    asyncio.run(stream())
    [adapter] = seeded_bank.list_adapters()
    assert adapter.name == NAME and adapter.base_model == "smollm2-135m" and adapter.stats["examples"] >= 2
    offered = free_variant(seeded_bank, spec_reader(seeded_bank), POT, {VARIANT.id}, task(4), "type:times",
                           "smollm2-135m")
    assert offered is not None and offered[0].adapter == adapter.id  # it enters as an arm of its own


def test_a_shared_banks_password_reaches_the_training_process_in_its_environment_not_its_argv():
    from types import SimpleNamespace

    from jitagent.improvement.retrain import child_location

    def bank(url):
        return SimpleNamespace(path=None, store=SimpleNamespace(url=url))

    bare = "postgresql://jit@127.0.0.1:5432/bank"
    shared = bank("postgresql://jit:p%40ss@127.0.0.1:5432/bank")
    assert child_location(shared) == (bare, {**os.environ, "PGPASSWORD": "p@ss"})
    assert child_location(bank(bare)) == (bare, None)  # PGPASSWORD or ~/.pgpass, inherited as they are
    assert child_location(bank("postgresql://jit:@127.0.0.1:5432/bank")) == (bare, None)
    assert child_location(bank("postgresql://:pw@[::1]:5432/bank")) == (
        "postgresql://[::1]:5432/bank", {**os.environ, "PGPASSWORD": "pw"})
