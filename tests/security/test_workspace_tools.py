"""Red team, issue 22: what a task does to its own workspace never stops the server's tools, and they
never leave the workspace — a symlink loop, a tree deeper than Python's recursion limit, a directory
swapped for a link in the middle of a call. Every case goes through the tools a model calls."""

from __future__ import annotations

import asyncio
import ctypes
import os
import threading
import time
from collections import Counter

import pytest

from jitagent.sandbox.host import is_root
from jitagent.sandbox.launch import WORKSPACES, SandboxLimits, Workspace, bwrap_works
from jitagent.sandbox.tools import ToolBox

LIMITS = SandboxLimits(wall_s=60, cpu_s=30)
DEPTH = 1500
SWAPS = 10_000
AT_FDCWD, RENAME_EXCHANGE = -100, 2


def call(box: ToolBox, tool: str, **args):
    return asyncio.run(box.call(tool, args))


def test_a_symlink_loop_is_a_tool_error_that_names_the_tasks_path_only():
    with Workspace() as ws:
        box = ToolBox(ws, ["shell", "read_file", "write_file", "list_dir"], LIMITS)
        made = call(box, "shell", command="ln -s loop loop && ln -s b a && ln -s a b && mkdir d && "
                                          "ln -s ../d d/up && echo made")
        assert made.ok and "made" in made.output
        calls = [("read_file", {"path": "loop"}), ("read_file", {"path": "a/x.txt"}),
                 ("read_file", {"path": "d/up/up/up/x"}), ("write_file", {"path": "loop", "content": "x"}),
                 ("write_file", {"path": "a/new.txt", "content": "x"}), ("list_dir", {"path": "b"}),
                 ("list_dir", {"path": "d/up"})]
        results = [(tool, call(box, tool, **args)) for tool, args in calls]
        host = str(ws.root)
    for tool, result in results:
        assert not result.ok and result.output.startswith(f"error: {tool}: '"), result.output
        assert "symbolic link" in result.output, result.output
        assert host not in result.output and str(WORKSPACES) not in result.output


def test_a_path_out_of_the_workspace_is_refused_in_its_own_words():
    with Workspace() as ws:
        box = ToolBox(ws, ["read_file", "list_dir"])
        results = [call(box, "read_file", path="../../../../etc/passwd"),
                   call(box, "read_file", path="/etc/passwd"), call(box, "list_dir", path="..")]
    for result in results:
        assert not result.ok and "escapes the workspace" in result.output and "root:" not in result.output


@pytest.mark.skipif(not (is_root() or bwrap_works()), reason="a run has /tmp/ws and its own /tmp only "
                                                            "with bwrap or as root")
def test_a_tree_deeper_than_the_recursion_limit_is_handed_over_and_cleared_run_after_run():
    def build(*tops: str) -> str:
        return f"""
import os
for top in {tops!r}:
    os.chdir(top)
    for _ in range({DEPTH}):
        os.mkdir('d'); os.chdir('d')
print('built')
"""
    deepest = "/".join(["d"] * DEPTH)
    with Workspace() as ws:
        box = ToolBox(ws, ["python", "read_file", "list_dir"], LIMITS)
        runs = [call(box, "python", code=build("/tmp/ws", "/tmp"))]
        scratch_after_first = sorted(os.listdir(ws.root))
        # the next run can write at the bottom: the hand-over reached it
        bottom = f"open({deepest + '/bottom.txt'!r}, 'w').write('ok'); print('wrote')"
        runs.append(call(box, "python", code=bottom))
        runs.append(call(box, "python", code=build("/tmp")))  # and /tmp again: cleared again
        read = call(box, "read_file", path=f"{deepest}/bottom.txt")
        listed = call(box, "list_dir", path=deepest)
        scratch_after_last = sorted(os.listdir(ws.root))
        root = ws.root
    assert [r.ok for r in runs] == [True, True, True], [r.output for r in runs]
    assert "built" in runs[0].output and "wrote" in runs[1].output
    assert scratch_after_first == scratch_after_last == ["ws"]
    assert (read.ok, read.output, listed.output) == (True, "ok", "bottom.txt")
    assert not root.exists()


def test_a_directory_swapped_for_a_link_mid_call_never_takes_a_file_tool_outside(tmp_path):
    libc = ctypes.CDLL(None, use_errno=True)
    if not hasattr(libc, "renameat2"):
        pytest.skip("this libc has no renameat2 (glibc 2.28 or later)")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("host secret")
    (outside / "only-outside").write_text("")
    tally: Counter[str] = Counter()
    with Workspace({"d/secret.txt": "inside", "d/only-inside": ""}) as ws:
        (ws.path / "link").symlink_to(outside)  # what a run would plant: a link to the host
        box = ToolBox(ws, ["read_file", "write_file", "list_dir"])
        started, done = threading.Event(), threading.Event()

        def swap():
            a, b = bytes(ws.path / "d"), bytes(ws.path / "link")
            started.wait(10)
            try:
                for _ in range(SWAPS):
                    if libc.renameat2(AT_FDCWD, a, AT_FDCWD, b, RENAME_EXCHANGE) != 0:
                        raise OSError(ctypes.get_errno(), "renameat2")
                    tally["swaps"] += 1
                    time.sleep(0.0001)  # spread the swaps over many calls
            finally:
                done.set()

        async def use_tools():
            started.set()
            while not done.is_set():
                read = await box.call("read_file", {"path": "d/secret.txt"})
                write = await box.call("write_file", {"path": "d/written.txt", "content": "x"})
                listed = await box.call("list_dir", {"path": "d"})
                escaped = {"read": "host secret" in read.output, "listed": "only-outside" in listed.output,
                           "written": (outside / "written.txt").exists()}
                for result in (read, write, listed):
                    tally["ok" if result.ok else "refused"] += 1
                for kind, outside_too in escaped.items():
                    tally[f"{kind} outside"] += outside_too
                (outside / "written.txt").unlink(missing_ok=True)
                tally["calls"] += 3
        swapper = threading.Thread(target=swap)
        swapper.start()
        asyncio.run(use_tools())
        swapper.join()
    print(dict(tally))
    assert tally["swaps"] == SWAPS and tally["calls"] > 1000
    assert tally["read outside"] == tally["written outside"] == tally["listed outside"] == 0
    assert sorted(p.name for p in outside.iterdir()) == ["only-outside", "secret.txt"]
    assert tally["ok"] and tally["refused"]  # the calls did meet both states of the swap
