"""The arms `jitagent bench` knows, and those it runs by default.

The tool arms are jit_warm's stream from a bank that also had code written for its clusters ahead of time
(on `learn`, gated on `score`): `jit_tools` by the tool writer (`--tool-writer`), `jit_tools_small` by the
meta-model (the writer's size, measured), `jit_tools_unverified` by the tool writer with the first draft
that runs accepted, unchecked (what verification is worth).

The examples arms: `jit_examples` is jit_warm's stream from a bank where each warm seed's variant shown its
cluster's verified solutions (`prompts.examples`, default settings) was warmed on `learn` after the seeds, so
it is an arm of every cluster; `examples_ablation` runs the best screened seed's variants of EXAMPLE_ABLATIONS
through the `final` stream alone (no routing), each from the warm bank, recording its own outcomes as it goes
(a task is shown only earlier tasks' solutions): what the examples are worth by how they are picked and how
many.

The adapter arms read what the bank's verified runs are worth in the weights: `jit_examples_adapter` is
jit_examples' stream from its warm bank after a LoRA of the solver was trained on that bank's verified `learn`
runs (and, with `--expert`, verified corrections of its failed ones) and gated on `score` (adapted.py): the
adapter's harness variants then enter the clusters' arms like any other. `fixed_adapter` runs the best
screened seed with that adapter on `final` (the weights alone, no routing), beside `fixed` (neither) and
jit_examples (the harness alone)."""

from jitagent.harness.spec import ExamplesSpec

TOOL_ARMS = ("jit_tools", "jit_tools_small", "jit_tools_unverified")
EXAMPLE_ARMS = ("jit_examples", "examples_ablation")
ADAPTER_ARMS = ("fixed_adapter", "jit_examples_adapter")
# the default first, then how they are picked, then how many: a cut-short run still reads the main contrasts
EXAMPLE_ABLATIONS = (ExamplesSpec(k=2), ExamplesSpec(k=2, pick="nearest"), ExamplesSpec(k=2, pick="random"),
                     ExamplesSpec(k=1), ExamplesSpec(k=3))
ARMS = ("fixed", "oracle", "jit_static", "jit_stream", "jit_warm", *TOOL_ARMS, *EXAMPLE_ARMS, *ADAPTER_ARMS)
DEFAULT_ARMS = ("fixed", "oracle", "jit_stream", "jit_warm")
STREAM_ARMS = tuple(a for a in ARMS if a.startswith("jit_"))
BARE = "bare"  # the solver's weights with no harness, served as their users serve them (bare.py)
STREAMED_ARMS = ("fixed", BARE, "jit_stream", "jit_warm", "jit_examples")  # the arms `bench --stream` runs
STREAM_ONLY = tuple(a for a in STREAMED_ARMS if a not in ARMS)
ALL_ARMS = ARMS + STREAM_ONLY
STREAMED_DEFAULT = ("fixed", "jit_examples")
WARMED_ARMS = ("jit_warm", *TOOL_ARMS, *EXAMPLE_ARMS, *ADAPTER_ARMS)  # arms that start from the warm bank
# the bench's adapters in its adapter bank: with the expert's corrections, and without them
ADAPTER, PLAIN_ADAPTER = "bench", "bench-plain"
