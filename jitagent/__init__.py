"""jitagent: build the right agent harness for each task, just in time.

`JitAgent` (sync) and `JitAgentClient` (async) talk to a server; `JitPipeline` is the same work in
process. They are imported on first use, so `import jitagent` stays light.
"""

__version__ = "0.2.0"
DEFAULT_ADDRESS = "127.0.0.1:50051"  # where the clients look for a server unless told otherwise
__all__ = ["JitAgent", "JitAgentClient", "JitAgentError", "JitPipeline", "__version__"]

_HOMES = {"JitAgent": "jitagent.protocol.sdk", "JitAgentError": "jitagent.protocol.sdk",
          "JitAgentClient": "jitagent.protocol.client", "JitPipeline": "jitagent.solving.pipeline"}


def __getattr__(name: str):
    if name in _HOMES:
        from importlib import import_module

        return getattr(import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'jitagent' has no attribute {name!r}")
