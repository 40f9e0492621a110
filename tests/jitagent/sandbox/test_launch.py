"""Hostile code ends contained, with the tool error reported and the host unharmed."""

import asyncio
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import jitagent.sandbox.launch as sandbox
from jitagent.sandbox.host import is_root, owner_tag, remove_tree
from jitagent.sandbox.launch import (
    FULL_CONFINEMENT,
    WORKSPACES,
    SandboxLimits,
    Workspace,
    bwrap_works,
    reclaim_leftovers,
    sandbox_python,
)
from jitagent.sandbox.tools import ToolBox

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


def test_the_wall_limit_never_exceeds_the_time_left_before_the_deadline():
    with Workspace() as ws:
        box = ToolBox(ws, ["shell"], SandboxLimits(wall_s=30))
        start = time.monotonic()
        result = asyncio.run(box.call("shell", {"command": "sleep 20"}, deadline=start + 1.0))
        assert not result.ok and "killed: wall-clock limit" in result.output
        assert time.monotonic() - start < 3
        late = asyncio.run(box.call("shell", {"command": "touch started"}, deadline=time.monotonic() - 1))
        assert not late.ok and not (ws.path / "started").exists()  # past the deadline nothing starts


def test_memory_bomb_is_contained():
    with Workspace() as ws:
        result = run_python("x = bytearray(4 * 1024 ** 3)\nprint('allocated')", ws)
    assert not result.ok and "allocated" not in result.output
    assert "MemoryError" in result.output or "killed" in result.output


def test_fork_bomb_is_contained_and_leaves_no_process():
    marker = f"{uuid.uuid4().int % 10**6}.75"
    with Workspace() as ws:
        box = ToolBox(ws, ["shell"], LIMITS)
        command = f"bomb() {{ bomb | bomb & }}; sleep {marker} & bomb; sleep 2"
        result = asyncio.run(box.call("shell", {"command": command}))
    assert "Cannot fork" in result.output or "Resource temporarily unavailable" in result.output
    time.sleep(0.5)
    assert not [p for p in Path("/proc").glob("[0-9]*/cmdline") if marker.encode() in _read(p)]


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def test_write_outside_workspace_does_not_reach_the_host(tmp_path):
    marker = tmp_path / "escaped.txt"
    with Workspace() as ws:
        result = run_python(f"open({str(marker)!r}, 'w').write('x')\nopen('/tmp/jitagent-escape', "
                            "'w').write('x')", ws)
    assert not result.ok
    assert not marker.exists() and not os.path.exists("/tmp/jitagent-escape")


def test_network_is_unreachable():
    with Workspace() as ws:
        result = run_python("import socket\ns = socket.create_connection(('127.0.0.1', 22), "
                            "timeout=2)\nprint('connected')", ws)
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


@pytest.mark.skipif(not (is_root() and bwrap_works()), reason="full confinement needs root and bwrap")
def test_full_confinement_with_bwrap_as_root():
    with Workspace() as ws:
        result = asyncio.run(ws.run([sandbox_python(), "-c", "print(1)"]))
    assert set(FULL_CONFINEMENT) <= set(result.confinement) and result.stdout == "1\n"


@pytest.mark.skipif(not is_root(), reason="namespaces, mounts and the uid pool need root")
def test_the_fallback_launcher_confines_what_it_can(monkeypatch):
    monkeypatch.setattr(sandbox, "bwrap_works", lambda: False)
    probe = ("import os, socket\n"
             "status = dict(l.split(':', 1) for l in open('/proc/self/status'))\n"
             "try:\n    socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM); vsock = 'created'\n"
             "except OSError as exc:\n    vsock = exc.errno\n"
             "print(os.getcwd(), status['Seccomp'].strip(), status['NoNewPrivs'].strip(), vsock)")
    with Workspace({"in.txt": "x"}) as ws:
        result = asyncio.run(ws.run([sandbox_python(), "-c", probe]))
    applied = set(result.confinement)
    assert {"pidns", "mountns", "procfs", "netns", "uid", "rlimits", "disk", "seccomp"} <= applied
    assert "bwrap" not in applied
    assert result.stdout == "/tmp/ws 2 1 1\n"  # filtered, no_new_privs, vsock refused with EPERM


def test_a_file_that_cannot_be_written_leaves_no_workspace():
    def ours():
        return {p for p in WORKSPACES.iterdir() if p.name.startswith(owner_tag())}
    before = ours()
    with pytest.raises(OSError):
        Workspace({"a": "x", "a/b": "y"})
    assert ours() == before


def test_server_side_reads_and_listings_are_bounded():
    with Workspace({"big.txt": "z" * 50_000, **{f"d/{i}.txt": "" for i in range(30)}}) as ws:
        text, cut = ws.read_text("big.txt", 100)
        names, count = ws.list_names("d", 10)
        with pytest.raises(ValueError, match="not a regular file"):
            ws.read_text("d", 100)
    assert (len(text), cut) == (100, True) and len(names) == 10 and count == 30


def test_leftovers_of_a_dead_owner_are_reclaimed_and_a_live_owners_are_kept():
    leave_one = "from jitagent.sandbox.launch import Workspace; print(Workspace().root)"
    dead = subprocess.run([sys.executable, "-c", leave_one], capture_output=True, text=True, check=True)
    dead = dead.stdout.strip()
    with Workspace() as mine:
        reclaimed = reclaim_leftovers()
        assert dead in reclaimed and not os.path.exists(dead)
        assert mine.path.is_dir() and str(mine.root) not in reclaimed


@pytest.mark.parametrize("plant", ["link", "world-writable"])
def test_a_workspaces_directory_planted_by_someone_else_is_refused(tmp_path, monkeypatch, plant):
    planted = tmp_path / "workspaces"
    if plant == "link":
        (tmp_path / "elsewhere").mkdir()
        planted.symlink_to(tmp_path / "elsewhere")
    else:
        planted.mkdir()
        planted.chmod(0o777)
    monkeypatch.setattr(sandbox, "WORKSPACES", planted)
    with pytest.raises(RuntimeError, match="only it can write"):
        Workspace()


def test_a_tree_too_deep_for_a_path_is_removed_off_a_tmpfs_too(tmp_path):
    """Without root a workspace has no tmpfs to unmount: its tree is removed entry by entry."""
    top = tmp_path / "deep"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(3000):  # 6,000 characters of path: deeper than PATH_MAX and the recursion limit
        os.mkdir("d", dir_fd=fd)
        os.symlink("/etc", "link", dir_fd=fd)
        child = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = child
    os.close(fd)
    remove_tree(top)
    assert not top.exists() and os.path.exists("/etc/passwd")


@pytest.mark.skipif(not (is_root() and bwrap_works()), reason="a run's own uid needs root and bwrap")
def test_runs_work_under_the_servers_private_umask(monkeypatch):
    """The server's umask is 077 once its bank is open (jitagent.config.paths); its workspaces stay passable
    to a run's uid, and a run's own files get the usual 022."""
    monkeypatch.setattr(sandbox, "WORKSPACES", Path(f"/tmp/jitagent-umask-test-{uuid.uuid4().hex}"))
    old = os.umask(0o077)
    try:
        with Workspace({"in.txt": "x"}) as ws:
            result = run_python("import os; open('new.txt', 'w').close(); "
                                "print(open('in.txt').read(), oct(os.stat('new.txt').st_mode & 0o777))", ws)
    finally:
        os.umask(old)
        sandbox.WORKSPACES.rmdir()
    assert result.ok and result.output == "x 0o644", result.output


@pytest.mark.skipif(not (is_root() and bwrap_works()), reason="the run's init is bwrap's child: needs root")
def test_a_run_whose_server_died_during_bwraps_setup_does_not_start():
    """bwrap sets its child's parent-death signal only after its setup: a server killed then left the run
    going (seen in CI). The run's init first reads the server's lifeline, a pipe only the server writes to:
    at end of file the server is gone, and the program never starts."""
    from jitagent.sandbox.launch import _launcher_argv, _launcher_config, leased_uid

    with Workspace() as ws, leased_uid() as uid:
        ws._hand_over(uid)
        config = _launcher_config(ws, LIMITS, uid, {}, use_bwrap=True)
        for alive in (True, False):
            lifeline_r, lifeline_w = os.pipe()
            if not alive:
                os.close(lifeline_w)  # the server died before the init looked
            config["init"] = [*config["init"][:-1], str(lifeline_r)]
            done = subprocess.run(_launcher_argv(config, ["/bin/sh", "-c", "echo RAN"]), capture_output=True,
                                  text=True, timeout=30, pass_fds=(lifeline_r,),
                                  env={"PATH": sandbox.SANDBOX_PATH})
            os.close(lifeline_r)
            if alive:
                os.close(lifeline_w)
            assert (done.returncode, done.stdout.strip()) == ((0, "RAN") if alive else (137, "")), done.stderr
