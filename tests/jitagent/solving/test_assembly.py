import pytest

from jitagent.harness.seeds import load_seeds
from jitagent.solving.assembly import build_pipeline
from jitagent.solving.config import PipelineConfig


def test_the_pipeline_gets_both_models_and_a_bank_holding_the_seeds(tmp_path):
    config = PipelineConfig(learn=False)
    pipeline = build_pipeline(tmp_path / "bank.db", cache_dir=tmp_path, meta_model="scripted",
                              solver_model=None, api_key=None, config=config, preload=True)
    try:
        assert pipeline.config is config
        assert pipeline.meta.name == pipeline.solver.name  # the solver defaults to the meta-model
        assert [h.name for h in pipeline.bank.list_harnesses()] == list(load_seeds())
    finally:
        pipeline.bank.close()


def test_a_model_name_that_does_not_exist_leaves_no_bank_behind(tmp_path):
    with pytest.raises(ValueError, match="unknown model"):
        build_pipeline(tmp_path / "bank.db", cache_dir=tmp_path, meta_model="no-such-model",
                       solver_model=None, api_key=None, config=PipelineConfig())
    assert not (tmp_path / "bank.db").exists()
