"""One place that assembles a pipeline: the two models, the bank holding the seeds, the pipeline over
them. `serve`, `worker`, `synthesize`/`solve`, `evolve` and the bench's JIT arms build theirs here."""

from __future__ import annotations

from pathlib import Path

from jitagent.models.base import ModelClient
from jitagent.solving.config import PipelineConfig
from jitagent.solving.pipeline import JitPipeline


def build_pipeline(bank: str | Path, *, cache_dir: Path | None, meta_model: str, solver_model: str | None,
                   api_key: str | None, config: PipelineConfig, preload: bool = False,
                   tool_writer: str | None = None) -> JitPipeline:
    """`bank`: a file or a postgresql:// URL (its index cached in `cache_dir`); `solver_model` and
    `tool_writer` (writes code for clusters) default to the meta-model. `preload`: load the weights and the
    embedder now, so that a long-lived process's first task does not pay for them. The models are named
    before the bank opens: a wrong name leaves no bank behind."""
    from jitagent.models import load_model

    meta = load_model(meta_model, slot="meta", api_key=api_key)
    solver = load_model(solver_model or meta_model, slot="solver", api_key=api_key)
    writer = load_model(tool_writer, slot="meta", api_key=api_key) if tool_writer else meta
    pipeline = pipeline_on(bank, meta, solver, config, cache_dir=cache_dir, writer=writer)
    if preload:
        for model in (meta, solver):
            if hasattr(model, "load"):
                model.load()
        pipeline.bank.search("warm up the embedder", k=1)
    return pipeline


def pipeline_on(bank: str | Path, meta: ModelClient, solver: ModelClient, config: PipelineConfig, *,
                cache_dir: Path | None = None, writer: ModelClient | None = None) -> JitPipeline:
    """A pipeline over models already loaded: the bank opened (created if new) and holding the seeds."""
    from jitagent.config.paths import open_bank
    from jitagent.harness.seeds import seed_bank

    store = open_bank(bank, cache_dir=cache_dir, models=[meta.name, solver.name])
    seed_bank(store)
    return JitPipeline(store, meta, solver, config, writer=writer)
