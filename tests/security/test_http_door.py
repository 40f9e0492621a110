"""Red team, issue 27: 1,100 idle connections to the OpenAI-compatible door, with no token, took the
whole server down at the usual 1,024 open-files limit: gRPC answered UNAVAILABLE and health failed. Now
the server raises its soft limit to the hard one at start, the door holds a bounded number of
connections, and one that sends no whole request in time is closed."""

from __future__ import annotations

import asyncio
import os
import resource
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from jitagent.doors.openai_http import MAX_CONNECTIONS, REQUEST_TIMEOUT_S, OpenAIDoor
from jitagent.protocol.client import JitAgentClient
from jitagent.solving.access import Access
from jitagent.solving.layer import Solving

from ..jitagent.doors.conftest import free_port

IDLE_CLIENTS = 2000
USUAL_LIMIT = 1024

needs_room = pytest.mark.skipif(resource.getrlimit(resource.RLIMIT_NOFILE)[1] < IDLE_CLIENTS + 500,
                                reason="the test holds 2,000 connections itself")


def serve(port: int, openai_port: int, data: Path, token: str, log) -> subprocess.Popen:
    """A server started as most hosts start one: 1,024 descriptors, the hard limit above it."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    usual = (USUAL_LIMIT, hard)
    return subprocess.Popen([sys.executable, "-m", "jitagent", "serve", "--port", str(port),
                             "--openai-port", str(openai_port), "--data-dir", str(data),
                             "--meta-model", "scripted", "--no-dry-run", "--n", "1"],
                            env={**os.environ, "JITAGENT_AUTH_TOKEN": token}, stdout=log, stderr=log,
                            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, usual))


def idle_clients(port: int, count: int) -> list[socket.socket]:
    """Connections that never send a byte (no token, no request)."""
    clients = []
    for _ in range(count):
        sock = socket.socket()
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
        clients.append(sock)
    return clients


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


@needs_room
def test_two_thousand_idle_http_clients_leave_grpc_serving(tmp_path):
    token, port, openai_port = uuid.uuid4().hex, free_port(), free_port()
    own = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (own[1], own[1]))  # this process holds the 2,000
    log_path = tmp_path / "server.log"
    with open(log_path, "wb") as log:
        server = serve(port, openai_port, tmp_path / "data", token, log)
    clients = []

    async def health() -> str:
        async with JitAgentClient(f"127.0.0.1:{port}", token=token) as client:  # a new connection each
            return await client.health(timeout=5)

    async def ready():
        async with JitAgentClient(f"127.0.0.1:{port}", token=token) as client:
            await client.wait_ready(300)
    try:
        asyncio.run(ready())
        clients = idle_clients(openai_port, IDLE_CLIENTS)
        time.sleep(2)  # the server accepts what it will
        during = [asyncio.run(health()) for _ in range(3)]
        held = descriptors(server.pid)
        time.sleep(REQUEST_TIMEOUT_S + 3)
        after = descriptors(server.pid)
        still = asyncio.run(health())
    finally:
        for sock in clients:
            sock.close()
        server.kill()
        server.wait()
        resource.setrlimit(resource.RLIMIT_NOFILE, own)
    assert during == ["SERVING"] * 3 and still == "SERVING"
    assert held < MAX_CONNECTIONS + 400, held  # the door's bound, and what the server holds besides
    assert after < 400, after  # the idle ones closed
    assert log_path.stat().st_size < 1 << 20


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/jitagent/feedback"])
def test_a_client_that_leaves_mid_body_gets_an_answer_not_a_logged_traceback(path):
    """A Content-Length the client never sends and a hang-up: ClientDisconnect escaped the route, and
    uvicorn logged 3 KB of traceback for each such request."""
    door = OpenAIDoor(Solving(object(), max_queue=1, access=Access.one_token("t")), keepalive_s=5)
    scope = {"type": "http", "method": "POST", "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": [(b"authorization", b"Bearer t"), (b"content-length", b"1000000")],
             "http_version": "1.1", "scheme": "http", "server": ("127.0.0.1", 80), "root_path": ""}
    incoming = [{"type": "http.request", "body": b'{"messages": [', "more_body": True},
                {"type": "http.disconnect"}]
    sent = []

    async def receive():
        return incoming.pop(0)

    async def send(message):
        sent.append(message)
    asyncio.run(door.app(scope, receive, send))
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 400


def test_a_declared_body_over_the_cap_is_refused_before_a_byte_of_it_is_read():
    """Content-Length 10**12 and two bytes sent: reading would wait for the rest until the client gives up."""
    door = OpenAIDoor(Solving(object(), max_queue=1, access=Access.one_token("t")), keepalive_s=5)
    path = "/v1/chat/completions"
    scope = {"type": "http", "method": "POST", "path": path, "raw_path": path.encode(), "query_string": b"",
             "headers": [(b"authorization", b"Bearer t"), (b"content-length", b"1000000000000")],
             "http_version": "1.1", "scheme": "http", "server": ("127.0.0.1", 80), "root_path": ""}
    sent, read = [], []

    async def receive():
        read.append(1)
        await asyncio.sleep(3600)  # the rest of the body never comes

    async def send(message):
        sent.append(message)
    asyncio.run(asyncio.wait_for(door.app(scope, receive, send), 10))
    assert sent[0]["status"] == 413 and b"request body over" in sent[1]["body"] and not read
