"""What a pipeline is configured with: its router, whether it learns, synthesis, code for clusters, adapters
retrained online, practice on failed tasks. A field per part, each part's own config (the doors' and the
CLI's settings read them)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from harness_bank.router import RouterConfig
from jitagent.improvement.practice import PracticeConfig
from jitagent.improvement.retrain import RetrainConfig
from jitagent.improvement.synthesis.synthesize import SynthesisConfig
from jitagent.improvement.toolmaking import ToolmakingConfig
from jitagent.improvement.toolshop import PlateauConfig


class PipelineConfig(BaseModel):
    router: RouterConfig = Field(default_factory=RouterConfig)
    learn: bool = Field(True, description="record outcomes in the bank (streaming JIT); False: static")
    keep_candidates: bool = Field(True,
                                  description="store every candidate in the bank (lineage, training data)")
    mutation_n: int = Field(1, ge=1, le=8, description="candidates of a reflective mutation: the bandit, not "
                                                          "the meta-model's taste, chooses among variants")
    failures: int = Field(3, ge=0, le=5, description="recent failures of the parent shown to a mutation")
    synthesis: SynthesisConfig = Field(default_factory=SynthesisConfig)
    online_tools: bool = Field(True, description="in a plateaued cluster the router's synthesis draw asks "
                               "for code written for the cluster (between tasks), not for a prompt edit")
    toolmaking: ToolmakingConfig = Field(default_factory=ToolmakingConfig)
    plateau: PlateauConfig = Field(default_factory=PlateauConfig)
    retrain: RetrainConfig = Field(default_factory=RetrainConfig)
    practice: PracticeConfig = Field(default_factory=PracticeConfig)
    runs_code: bool = Field(True, description="run harnesses' code sections; False where runs cannot be "
                            "confined (JitPipeline.confine)")
