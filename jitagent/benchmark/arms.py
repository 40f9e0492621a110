"""The arms `jitagent bench` knows, and those it runs by default."""

ARMS = ("fixed", "oracle", "jit_static", "jit_stream", "jit_warm")
DEFAULT_ARMS = ("fixed", "oracle", "jit_stream", "jit_warm")
