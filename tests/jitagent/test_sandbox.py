"""Hostile code ends contained, with the tool error reported and the host unharmed."""

import asyncio
import os
import time

import pytest

from jitagent.sandbox import SandboxLimits, Workspace, sandbox_python
from jitagent.tools import ToolBox

LIMITS = SandboxLimits(wall_s=4, cpu_s=3, memory_mb=256, processes=16)


def run_python(code: str, ws: Workspace):
    box = ToolBox(ws, ["python", "shell"], LIMITS)
    return asyncio.run(box.call("python", {"code": code}))


def test_plain_run_sees_workspace_files():
    with Workspace({"in.txt": "hello"}) as ws:
        result = run_python("print(open('in.txt').read().upper())", ws)
    assert result.ok and result.output == "HELLO"


def test_infinite_loop_is_killed():
    with Workspace() as ws:
        start = time.monotonic()
        result = run_python("while True: pass", ws)
    assert not result.ok and time.monotonic() - start < 10
    assert "killed" in result.output or "signal" in result.output


def test_memory_bomb_is_contained():
    with Workspace() as ws:
        result = run_python("x = bytearray(4 * 1024 ** 3)\nprint('allocated')", ws)
    assert not result.ok and "allocated" not in result.output
    assert "MemoryError" in result.output or "killed" in result.output


def test_fork_bomb_is_contained_and_leaves_no_process():
    with Workspace() as ws:
        box = ToolBox(ws, ["shell"], LIMITS)
        result = asyncio.run(box.call("shell", {"command": "bomb() { bomb | bomb & }; bomb; sleep 2"}))
    assert "Cannot fork" in result.output or "Resource temporarily unavailable" in result.output
    time.sleep(0.5)
    left = os.popen("ps -u nobody -o pid= 2>/dev/null").read().split() if os.geteuid() == 0 else []
    assert left == []


def test_write_outside_workspace_does_not_reach_the_host(tmp_path):
    marker = tmp_path / "escaped.txt"
    with Workspace() as ws:
        result = run_python(f"open({str(marker)!r}, 'w').write('x')\nopen('/tmp/jitagent-escape', 'w').write('x')", ws)
    assert not result.ok
    assert not marker.exists() and not os.path.exists("/tmp/jitagent-escape")


def test_network_is_unreachable():
    with Workspace() as ws:
        result = run_python("import socket\ns = socket.create_connection(('127.0.0.1', 22), timeout=2)\nprint('connected')", ws)
    assert "connected" not in result.output and not result.ok


def test_output_is_truncated_to_a_bound():
    with Workspace() as ws:
        result = run_python("print('y' * 1_000_000)", ws)
    assert len(result.output) < 20_000 and "truncated" in result.output


def test_file_tools_refuse_paths_outside_the_workspace():
    with Workspace() as ws:
        box = ToolBox(ws, ["read_file", "write_file", "list_dir"])
        assert not asyncio.run(box.call("read_file", {"path": "../../etc/passwd"})).ok
        assert not asyncio.run(box.call("write_file", {"path": "/etc/evil", "content": "x"})).ok
        assert asyncio.run(box.call("write_file", {"path": "a/b.txt", "content": "hi"})).ok
        assert asyncio.run(box.call("list_dir", {"path": "a"})).output == "b.txt"


def test_tool_not_allowed_and_bad_arguments_are_reported():
    with Workspace() as ws:
        box = ToolBox(ws, ["python"])
        assert "not available" in asyncio.run(box.call("shell", {"command": "ls"})).output
        assert "bad arguments" in asyncio.run(box.call("python", {"source": "1"})).output


@pytest.mark.skipif(os.geteuid() != 0, reason="namespaces and uid drop need root")
def test_confinement_applied_as_root():
    with Workspace() as ws:
        result = asyncio.run(ws.run([sandbox_python(), "-c", "print(1)"]))
    assert {"pidns", "mountns", "netns", "uid", "rlimits"} <= set(result.confinement)
