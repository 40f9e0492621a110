"""The host resources of a run: uids no two runs share, cgroups that hold and end a whole run."""

import os
import subprocess
import time
from pathlib import Path

import pytest

from jitagent.sandbox.host import UID_POOL, RunCgroup, is_root, leased_uid, owner_is_dead, owner_tag

needs_root = pytest.mark.skipif(not is_root(), reason="uids and cgroups need root")


def test_owner_tags_tell_a_live_owner_from_a_dead_one():
    child = subprocess.Popen(["true"])
    child.wait()
    assert not owner_is_dead(f"{owner_tag()}-ws-x")
    assert owner_is_dead(f"{child.pid}.1-ws-x")  # gone, or its start time differs
    assert owner_is_dead(f"{os.getpid()}.1-ws-x")  # this pid, another start time: a reused pid
    assert not owner_is_dead("not-a-tag")  # not ours to judge


@needs_root
def test_concurrent_leases_never_share_a_uid_and_a_released_one_comes_back():
    with leased_uid() as a, leased_uid() as b, leased_uid() as c:
        assert len({a, b, c}) == 3 and {a, b, c} <= set(UID_POOL)
        # another process cannot lease a held uid either: the lock is a lock file's flock
        probe = ("import fcntl, os; fd = os.open(%r, os.O_RDWR); "
                 "fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)")
        held = subprocess.run(["python3", "-c", probe % f"/run/jitagent/uids/{a}"], capture_output=True)
        assert held.returncode != 0 and b"BlockingIOError" in held.stderr
    free = subprocess.run(["python3", "-c", probe % f"/run/jitagent/uids/{a}"], capture_output=True)
    assert free.returncode == 0


@needs_root
def test_a_run_cgroup_caps_memory_and_processes_and_kill_ends_everything_in_it():
    group = RunCgroup(64 << 20, 8)
    assert set(group.joins) == {"cgroup-memory", "cgroup-pids"}
    paths = [Path(p).parent for p in set(group.joins.values())]
    child = subprocess.Popen(["sleep", "60"])
    for procs in set(group.joins.values()):
        Path(procs).write_text(str(child.pid))
    written = {f.name: f.read_text().strip() for p in paths for f in p.iterdir()
               if f.name in ("pids.max", "memory.limit_in_bytes", "memory.max")}
    assert written.get("pids.max") == "8"
    assert str(64 << 20) in (written.get("memory.limit_in_bytes"), written.get("memory.max"))
    group.kill()
    assert child.wait(timeout=2) == -9
    assert not any(p.exists() for p in paths)


@needs_root
def test_kill_is_quick_for_an_empty_run():
    group = RunCgroup(64 << 20, 8)
    start = time.monotonic()
    group.kill()
    assert time.monotonic() - start < 0.1
