"""Code written for a cluster of tasks — a `solve` stage that computes the answer, an `answer` stage that
puts the harness's answer in the form the task asks for — by a model, at run time, from the cluster's own
labelled tasks, and accepted only on labelled tasks its writer did not see. The project itself writes no
code or prompt for any task type: the writer's prompts are generic (seeds/toolmaking_prompts.yaml)."""

from jitagent.improvement.toolmaking.toolsmith import Toolmaking, ToolmakingConfig, Toolsmith
from jitagent.improvement.toolmaking.trials import Labelled
from jitagent.improvement.toolmaking.writer import Writer

__all__ = ["Labelled", "Toolmaking", "ToolmakingConfig", "Toolsmith", "Writer"]
