"""What a sandboxed run holds on the host, and getting it back: a uid of its own, a memory and
pids cgroup, a size-capped disk; each is released after the run and reclaimed at start-up from a
predecessor that was killed before it could release it.

Everything here needs root; without it each function says so by returning None or False, and the
run reports the missing limit in `ExecResult.confinement`.
"""

from __future__ import annotations

import ctypes
import fcntl
import itertools
import os
import random
import signal
import time
from contextlib import contextmanager, suppress
from pathlib import Path

from jitagent.sandbox import safe_files

# Host uids handed to runs, one run each at a time; none of them is in /etc/passwd.
UID_POOL = range(61000, 62000)
UID_LOCKS = Path("/run/jitagent/uids")
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_PREFIX = "jitagent-run-"
MNT_DETACH = 2
MS_NOSUID, MS_NODEV = 2, 4

_libc = ctypes.CDLL(None, use_errno=True)
_sequence = itertools.count()
_uid_order = random.Random()  # its own generator: seeding the global one must not change it


def is_root() -> bool:
    return os.geteuid() == 0


# --- owners: what a leftover belongs to, and whether that owner is gone -----------------------

def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]  # field 22; the command name may hold spaces


def owner_tag() -> str:
    """This process as `PID.STARTTIME`: a reused PID does not make a dead owner look alive."""
    return f"{os.getpid()}.{_start_time(os.getpid())}"


def owner_is_dead(name: str, prefix: str = "") -> bool:
    """Whether the leftover `name` (`PREFIX` + `PID.STARTTIME-...`) belongs to a process that is gone."""
    tag = name.removeprefix(prefix).split("-", 1)[0]
    pid, _, start = tag.partition(".")
    if not pid.isdigit() or not start:
        return False  # not ours to judge
    return _start_time(int(pid)) != start


# --- uids ------------------------------------------------------------------------------------

@contextmanager
def leased_uid():
    """A uid from the pool that no other run holds, across processes (a lock file per uid);
    None where this process cannot switch uid."""
    if not is_root():
        yield None
        return
    UID_LOCKS.mkdir(mode=0o700, parents=True, exist_ok=True)
    start = _uid_order.randrange(len(UID_POOL))
    for uid in itertools.chain(UID_POOL[start:], UID_POOL[:start]):
        fd = os.open(UID_LOCKS / str(uid), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        try:
            yield uid
        finally:
            os.close(fd)  # releases the lock
        return
    raise RuntimeError(f"all {len(UID_POOL)} sandbox uids are in use")


# --- cgroups ---------------------------------------------------------------------------------

def _own_cgroup(controller: str) -> str | None:
    """This process's cgroup path for a v1 controller, or the v2 path for controller ''."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if controller in controllers.split(",") or (controller == "" == controllers):
            return path
    return None


def _cgroup_parents() -> dict[str, Path]:
    """Where run cgroups go: under this process's own cgroup, so its limits still hold the runs.
    v2 where the unified hierarchy is mounted at the root, else the v1 memory and pids hierarchies."""
    if not is_root():
        return {}
    if (CGROUP_ROOT / "cgroup.controllers").exists():
        own = _own_cgroup("")
        return {"unified": CGROUP_ROOT / own.lstrip("/")} if own is not None else {}
    parents = {}
    for controller in ("memory", "pids"):
        own = _own_cgroup(controller)
        parent = CGROUP_ROOT / controller / (own or "/").lstrip("/")
        if own is not None and os.access(parent, os.W_OK):
            parents[controller] = parent
    return parents


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
        return True
    except OSError:
        return False


def _kill_and_remove(group: Path) -> None:
    """SIGKILL every process in the cgroup until it is empty, then remove it."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        except OSError:
            return
        if not pids:
            break
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.005)
    with suppress(OSError):
        group.rmdir()


class RunCgroup:
    """The cgroups of one run: memory (swap included) and process count for the whole run.
    `joins` maps each limit that applied to the cgroup.procs file the launcher writes its pid into,
    so the run starts inside it."""

    def __init__(self, memory_bytes: int, processes: int):
        self.groups: list[Path] = []
        self.joins: dict[str, str] = {}
        name = f"{CGROUP_PREFIX}{owner_tag()}-{next(_sequence)}"
        for kind, parent in _cgroup_parents().items():
            group = parent / name
            try:
                group.mkdir()
            except OSError:
                continue
            self.groups.append(group)
            procs = str(group / "cgroup.procs")
            if kind == "unified":
                self._enable_v2(parent)
                if _write(group / "memory.max", str(memory_bytes)) and _write(group / "memory.swap.max", "0"):
                    self.joins["cgroup-memory"] = procs
                if _write(group / "pids.max", str(processes)):
                    self.joins["cgroup-pids"] = procs
            elif kind == "memory" and _write(group / "memory.limit_in_bytes", str(memory_bytes)):
                swap = group / "memory.memsw.limit_in_bytes"
                if not swap.exists() or _write(swap, str(memory_bytes)):
                    self.joins["cgroup-memory"] = procs
            elif kind == "pids" and _write(group / "pids.max", str(processes)):
                self.joins["cgroup-pids"] = procs

    @staticmethod
    def _enable_v2(parent: Path) -> None:
        enabled = (parent / "cgroup.subtree_control").read_text().split()
        missing = [c for c in ("memory", "pids") if c not in enabled]
        if missing:
            _write(parent / "cgroup.subtree_control", " ".join(f"+{c}" for c in missing))

    def kill(self) -> None:
        """End every process of the run, however it got away from its parent."""
        for group in self.groups:
            if (group / "cgroup.kill").exists():
                _write(group / "cgroup.kill", "1")
        for group in self.groups:
            _kill_and_remove(group)
        self.groups = []


def reclaim_cgroups() -> list[str]:
    """Kill and remove the run cgroups a killed predecessor left under this process's cgroup."""
    reclaimed = []
    for parent in _cgroup_parents().values():
        for group in parent.glob(f"{CGROUP_PREFIX}*"):
            if group.is_dir() and owner_is_dead(group.name, CGROUP_PREFIX):
                _kill_and_remove(group)
                reclaimed.append(str(group))
    return reclaimed


# --- disk ------------------------------------------------------------------------------------

def mount_capped(path: Path, size_mb: int, inodes: int) -> bool:
    """A tmpfs of `size_mb` and `inodes` on `path`; False where mounting is not permitted."""
    if not is_root():
        return False
    options = f"size={size_mb}m,nr_inodes={inodes},mode=0711".encode()
    return _libc.mount(b"tmpfs", str(path).encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options) == 0


def unmount(path: Path) -> None:
    _libc.umount2(str(path).encode(), MNT_DETACH)


def remove_tree(path: Path) -> None:
    """Remove a workspace: unmount its tmpfs if it has one (nothing inside is walked), else the tree,
    however deep (`safe_files.remove`)."""
    if os.path.ismount(path):
        unmount(path)
    parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        safe_files.remove(parent, path.name)
    finally:
        os.close(parent)


def reclaim_workspaces(root: Path) -> list[str]:
    """Remove the workspaces under `root` (each named after its owner) whose owning process is gone."""
    if not root.is_dir():
        return []
    reclaimed = []
    for path in root.iterdir():
        if owner_is_dead(path.name):
            remove_tree(path)
            reclaimed.append(str(path))
    return reclaimed
