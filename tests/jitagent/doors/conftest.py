import asyncio
import contextlib
import socket

import pytest

from jitagent.doors.server import JitAgentServer, ServerConfig
from jitagent.improvement.synthesis.synthesize import SynthesisConfig
from jitagent.protocol.client import JitAgentClient
from jitagent.solving.config import PipelineConfig


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def make_config(tmp_path):
    def make(meta="scripted", solver=None, n=1, dry_run=False, **kw) -> ServerConfig:
        return ServerConfig(port=free_port(), data_dir=tmp_path / "data", meta_model=meta,
                            solver_model=solver,
                            pipeline=PipelineConfig(synthesis=SynthesisConfig(n=n, dry_run=dry_run)), **kw)
    return make


def in_flight(server: JitAgentServer) -> float:
    """Tasks in flight as a scrape reads them (the gauge is a function of the solving layer: its stored
    value stays 0)."""
    return server.metrics.registry.get_sample_value("jitagent_tasks_in_flight")


async def until_idle(server: JitAgentServer, seconds: float = 10.0) -> float:
    """Wait until no task is in flight (or `seconds` passed); the count then."""
    for _ in range(int(seconds * 10)):
        if in_flight(server) == 0:
            break
        await asyncio.sleep(0.1)
    return in_flight(server)


@contextlib.asynccontextmanager
async def running(config: ServerConfig, token: str | None = None, **server_kw):
    """A real server on a real port and a client connected to it over the network."""
    server = JitAgentServer(config, **server_kw)
    port = await server.start()
    client = JitAgentClient(f"127.0.0.1:{port}", token=token)
    try:
        if "build" not in server_kw:
            await asyncio.wait_for(server.ready.wait(), 300)
        yield server, client
    finally:
        await client.close()
        await server.stop()
