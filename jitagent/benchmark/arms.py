"""The arms `jitagent bench` knows, and those it runs by default.

The tool arms are jit_warm's stream from a bank that also had code written for its clusters ahead of time
(on `learn`, gated on `score`): `jit_tools` by the tool writer (`--tool-writer`), `jit_tools_small` by the
meta-model (the writer's size, measured), `jit_tools_unverified` by the tool writer with the first draft
that runs accepted, unchecked (what verification is worth)."""

TOOL_ARMS = ("jit_tools", "jit_tools_small", "jit_tools_unverified")
ARMS = ("fixed", "oracle", "jit_static", "jit_stream", "jit_warm", *TOOL_ARMS)
DEFAULT_ARMS = ("fixed", "oracle", "jit_stream", "jit_warm")
STREAM_ARMS = tuple(a for a in ARMS if a.startswith("jit_"))
