"""Run untrusted code (tool calls, harness `code` sections, tests) confined to a workspace.

With bubblewrap (`bwrap`) and root, every run gets its own user, PID, mount, network, IPC and UTS
namespaces, a fresh /proc and as PID 1 an init that holds nothing of the host; a seccomp filter
(`jitagent.sandbox.seccomp`); a host uid no other run holds; the system directories read-only and nothing
else of the host; its workspace at /tmp/ws on a size-capped tmpfs that also holds its /tmp; memory
and process count capped for the whole run by cgroups; rlimits on CPU seconds, address space, file
size and open files; death with its parent.
The host kills it on the wall clock and bounds its output. Without bwrap, `launcher.py`
applies what the kernel allows (the fallback). `ExecResult.confinement` lists what applied. The
launcher is its own single-threaded process, so spawning is safe from a threaded gRPC server.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

from jitagent.sandbox import safe_files, seccomp
from jitagent.sandbox.host import (
    RunCgroup,
    leased_uid,
    mount_capped,
    owner_tag,
    reclaim_cgroups,
    reclaim_workspaces,
    remove_tree,
)

LAUNCHER = Path(__file__).with_name("launcher.py")
BWRAP = shutil.which("bwrap")
WORKSPACES = Path(tempfile.gettempdir()) / f"jitagent-workspaces-{os.geteuid()}"
DISK_MB = 64  # a workspace's tmpfs: its files and the run's /tmp
DISK_INODES = 16384
LAUNCH_PROCESSES = 2  # bwrap's monitor and the PID namespace's init, on top of the run's own
# The run's PID 1 in place of bwrap's own init (`--as-pid-1`), whose memory the run could read: it holds the
# host's mount table, other workspaces' host paths among them. A fresh interpreter holds only its argv: it
# runs the program as PID 2 (as PID 1, a signal it has no handler for, SIGXCPU or its own SIGTERM, would not
# kill it), reaps orphans, and exits as bwrap's init did, with the program's status (128 + its signal).
# It dies with bwrap's monitor (whose death ends the namespace), and first makes sure the server that
# started it lives: bwrap sets its child's parent-death signal only after its setup, and a server killed
# during that setup left a run behind. argv[1]: the read end of a pipe only the server writes to (`-`:
# none), at end of file once the server is gone.
INIT = """
import ctypes, os, select, signal, sys
ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
if sys.argv[1] != '-':
    if select.select([int(sys.argv[1])], [], [], 0)[0]:
        os._exit(137)
    os.close(int(sys.argv[1]))
pid = os.fork()
if pid == 0:
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores them, the program gets the defaults
        signal.signal(sig, signal.SIG_DFL)
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as exc:
        sys.stderr.write(f'execvp {sys.argv[2]}: {exc.strerror}\\n')
        os._exit(1)
while True:
    child, status = os.wait()
    if child == pid:
        os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
"""
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
SECCOMP_FILTER = seccomp.program()
# What a run gets with bwrap as root; `ExecResult.confinement` lacks what did not apply.
FULL_CONFINEMENT = ("bwrap", "userns", "pidns", "mountns", "netns", "ipcns", "utsns", "procfs", "seccomp",
                    "uid", "cgroup-memory", "cgroup-pids", "rlimits", "disk")
log = logging.getLogger("jitagent.sandbox.launch")


class SandboxLimits(BaseModel):
    wall_s: float = Field(10.0, gt=0, le=600)
    cpu_s: int = Field(10, ge=1, le=600)
    memory_mb: int = Field(512, ge=32, le=8192)
    file_mb: int = Field(16, ge=1, le=1024)
    processes: int = Field(32, ge=1, le=512)
    output_bytes: int = Field(8000, ge=256, le=1_000_000)
    open_files: int = Field(256, ge=16, le=4096)


@dataclass
class ExecResult:
    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    timed_out: bool = False
    truncated: bool = False
    confinement: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    @property
    def killed(self) -> bool:
        """Stopped from outside: by its wall-clock limit or a signal (a limit, the OOM killer)."""
        return self.timed_out or self.returncode < 0 or self.returncode >= 128

    def describe(self) -> str:
        """What the model sees as the observation of a run."""
        parts = []
        if self.stdout:
            parts.append(self.stdout.rstrip())
        if self.stderr:
            parts.append("[stderr]\n" + self.stderr.rstrip())
        if self.timed_out:
            parts.append(f"[killed: wall-clock limit {self.wall_s:.1f}s exceeded]")
        elif self.killed:
            sig = -self.returncode if self.returncode < 0 else self.returncode - 128
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else sig
            parts.append(f"[killed by signal {name}]")
        elif self.returncode:
            parts.append(f"[exit code {self.returncode}]")
        if self.truncated:
            parts.append("[output truncated]")
        return "\n".join(parts) or "(no output)"


def _world_accessible(path: str) -> bool:
    p = Path(path).resolve()
    return all(os.stat(d).st_mode & stat.S_IXOTH for d in [p, *p.parents])


def sandbox_python() -> str:
    """An interpreter the unprivileged sandbox user can execute (a venv under /root is not)."""
    if os.geteuid() != 0 or _world_accessible(sys.executable):
        return sys.executable
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.path.exists(candidate) and _world_accessible(candidate):
            return candidate
    raise RuntimeError("no python3 the sandbox user can execute; install Debian's python3")


class Workspace:
    """A per-task directory, the only place sandboxed code may write. As root it is a tmpfs of
    `disk_mb` (also holding the run's /tmp, so both count against the cap); its name says which
    process owns it, so a successor can remove it if that process is killed."""

    def __init__(self, files: dict[str, str] | None = None, prefix: str = "jitagent-ws-",
                 disk_mb: int = DISK_MB):
        _check_own_directory(WORKSPACES)
        self.root = Path(tempfile.mkdtemp(prefix=f"{owner_tag()}-{prefix}", dir=WORKSPACES))
        self.disk_mb = disk_mb
        self.disk_capped = mount_capped(self.root, disk_mb, DISK_INODES)
        self.path = self.root / "ws"
        # held open for the workspace's life: the server works beneath them, never by a host path
        self._root_fd: int | None = None
        self._fd: int | None = None
        try:
            self._root_fd = os.open(self.root, safe_files.DIRECTORY)
            self.path.mkdir()
            self._fd = os.open(self.path, safe_files.DIRECTORY)
            for name, content in (files or {}).items():
                self.write(name, content)
        except BaseException:
            self.close()  # a file that cannot be written leaves no workspace behind
            raise

    # The server's own reads and writes of a workspace a run has had its hands on: beneath the
    # workspace by construction (`jitagent.sandbox.safe_files`: no link followed, whatever a run does
    # meanwhile),
    # regular files only, never blocking, bounded. PathError names the path as the caller gave it.
    # Blocking, so call them from a worker thread when a run may have touched the workspace.
    def write(self, relative: str, content: str) -> None:
        fd = safe_files.open_file(self._fd, relative, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(content)

    def read_text(self, relative: str, limit: int) -> tuple[str, bool]:
        """At most `limit` characters of a file, and whether there was more."""
        fd = safe_files.open_file(self._fd, relative, os.O_RDONLY)
        with os.fdopen(fd, "rb") as f:
            data = f.read(4 * limit + 4)  # a UTF-8 character is at most 4 bytes
        text = data.decode(errors="replace")
        return text[:limit], len(text) > limit or len(data) > 4 * limit

    def list_names(self, relative: str, limit: int) -> tuple[list[str], int]:
        """The first `limit` entries of a directory, sorted (a trailing / marks a directory), and how many
        there are."""
        fd = safe_files.open_dir(self._fd, relative)
        try:
            with os.scandir(fd) as entries:
                names = sorted(e.name + ("/" if e.is_dir(follow_symlinks=False) else "") for e in entries)
        finally:
            os.close(fd)
        return names[:limit], len(names)

    def _hand_over(self, uid: int | None) -> None:
        """Give the workspace's tree to the run's uid; lchown, so a planted symlink redirects nothing."""
        if uid is None:
            return
        safe_files.chown_all(self._root_fd, uid)
        os.fchown(self._root_fd, uid, uid)
        os.fchmod(self._root_fd, 0o700)

    def _clear_scratch(self) -> None:
        """A run's /tmp vanishes with it: everything on the workspace's disk but the workspace."""
        for name in os.listdir(self._root_fd):
            if name != self.path.name:
                safe_files.remove(self._root_fd, name)

    async def run(self, argv: list[str], limits: SandboxLimits | None = None, stdin: str | None = None,
                  deadline: float | None = None) -> ExecResult:
        return await run_confined(argv, self, limits or SandboxLimits(), stdin=stdin, deadline=deadline)

    def close(self) -> None:
        for fd in (self._fd, self._root_fd):
            if fd is not None:
                os.close(fd)
        self._fd = self._root_fd = None
        remove_tree(self.root)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _check_own_directory(path: Path) -> None:
    """`path` exists as a directory this user owns and only it can write: in a shared /tmp, another
    user could have put a link or a directory of theirs there first."""
    with contextlib.suppress(FileExistsError):
        path.mkdir()
        path.chmod(0o711)  # whatever the server's umask: each run's uid passes through to its workspace
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise RuntimeError(f"{path} is not a directory of this user's that only it can write; remove it")


def reclaim_leftovers() -> list[str]:
    """Remove the workspaces and run cgroups of a predecessor that was killed mid-run (its sandboxes
    died with it: bwrap's --die-with-parent). Called once at server start-up."""
    return reclaim_workspaces(WORKSPACES) + reclaim_cgroups()


def _interpreter_dirs() -> list[str]:
    """The install of `sandbox_python()` when it is this process's own (a venv), to bind read-only."""
    if sandbox_python() != sys.executable:
        return []
    return sorted({d for d in (sys.prefix, sys.base_prefix)
                   if not any(d == s or d.startswith(s + "/") for s in SYSTEM_DIRS)})


def _bwrap_argv(workspace: Workspace) -> list[str]:
    """bwrap and its options; the launcher hands the options over on a descriptor, not in argv."""
    argv = [BWRAP, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent",
            "--new-session", "--as-pid-1"]
    for path in (*SYSTEM_DIRS, *_interpreter_dirs()):
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            argv += ["--ro-bind", path, path]
    return argv + ["--proc", "/proc", "--dev", "/dev", "--size", str(workspace.disk_mb << 20),
                   "--tmpfs", "/dev/shm", "--remount-ro", "/dev", "--bind", str(workspace.root), "/tmp",
                   "--bind", str(workspace.path), "/tmp/ws", "--chdir", "/tmp/ws", "--remount-ro", "/"]


def _launcher_config(workspace: Workspace, limits: SandboxLimits, uid: int | None, cgroups: dict[str, str],
                     use_bwrap: bool, report_fd: int | None = None) -> dict:
    return {
        "workspace": str(workspace.root), "uid": uid, "cgroups": cgroups, "report_fd": report_fd,
        "parent": os.getpid(),  # the launcher's parent: if it is another, the server died
        "bwrap": _bwrap_argv(workspace) if use_bwrap else None,
        "init": [sandbox_python(), "-I", "-S", "-c", INIT, "-"] if use_bwrap else [],  # `-`: no lifeline
        "seccomp": SECCOMP_FILTER.hex() if SECCOMP_FILTER else None,
        "limits": {"cpu_s": limits.cpu_s, "memory_bytes": limits.memory_mb << 20,
                   "file_bytes": limits.file_mb << 20, "processes": limits.processes + LAUNCH_PROCESSES,
                   "open_files": limits.open_files},
    }


def _launcher_argv(config: dict, argv: list[str]) -> list[str]:
    return [sys.executable, "-I", "-S", str(LAUNCHER), json.dumps(config), "--", *argv]


@functools.cache
def bwrap_works() -> bool:
    """Whether bwrap can confine a run here: installed, and user namespaces allowed (probed once)."""
    if BWRAP is None:
        log.warning("bwrap is not installed: sandboxed runs use the fallback launcher")
        return False
    with Workspace() as workspace, leased_uid() as uid:
        workspace._hand_over(uid)
        config = _launcher_config(workspace, SandboxLimits(), uid, {}, use_bwrap=True)
        probe = subprocess.run(_launcher_argv(config, ["/bin/true"]), capture_output=True, text=True,
                               timeout=30, env={"PATH": SANDBOX_PATH})
    if probe.returncode != 0:
        log.warning("bwrap cannot confine runs here (%s): sandboxed runs use the fallback launcher",
                    probe.stderr.strip()[-300:])
    return probe.returncode == 0


async def _read_bounded(stream: asyncio.StreamReader, cap: int) -> tuple[bytes, bool]:
    kept = bytearray()
    truncated = False
    while chunk := await stream.read(65536):
        room = cap - len(kept)
        if room > 0:
            kept += chunk[:room]
        if len(chunk) > room:
            truncated = True  # keep draining so the child never blocks on a full pipe
    return bytes(kept), truncated


async def run_confined(argv: list[str], workspace: Workspace, limits: SandboxLimits, *,
                       stdin: str | None = None, deadline: float | None = None) -> ExecResult:
    """Run argv confined to the workspace. `deadline` (time.monotonic) caps the wall clock too: the limit
    is at most the time left when the program starts, and past the deadline nothing starts."""
    if _time_left(limits, deadline) <= 0:
        return _out_of_time()
    use_bwrap = await asyncio.to_thread(bwrap_works)
    with leased_uid() as uid:
        cgroup = RunCgroup(limits.memory_mb << 20, limits.processes + LAUNCH_PROCESSES)
        try:
            await asyncio.to_thread(workspace._hand_over, uid)
            config = _launcher_config(workspace, limits, uid, cgroup.joins, use_bwrap)
            wall = _time_left(limits, deadline)  # the setup took some of it
            result = (await _launch(argv, config, cgroup, stdin, wall, limits.output_bytes) if wall > 0
                      else _out_of_time())
        finally:
            cgroup.kill()  # nothing of the run outlives it, nor holds its uid for the next one
            await asyncio.to_thread(workspace._clear_scratch)  # up to 16,384 entries: off the event loop
    if workspace.disk_capped:
        result.confinement.append("disk")
    return result


def _time_left(limits: SandboxLimits, deadline: float | None) -> float:
    return limits.wall_s if deadline is None else min(limits.wall_s, deadline - time.monotonic())


def _out_of_time() -> ExecResult:
    """What a program comes to that had no time left to start: it was not started."""
    return ExecResult(returncode=-9, stdout="", stderr="", wall_s=0.0, timed_out=True)


async def _launch(argv: list[str], config: dict, cgroup: RunCgroup, stdin: str | None, wall: float,
                  output_bytes: int) -> ExecResult:
    report_r, report_w = os.pipe()
    lifeline_r, lifeline_w = os.pipe()  # the write end only this process holds: the run's proof it lives
    config["report_fd"] = report_w
    if config["init"]:
        config["init"] = [*config["init"][:-1], str(lifeline_r)]
    start = time.monotonic()
    try:
        proc = await asyncio.create_subprocess_exec(
            *_launcher_argv(config, argv),
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True, pass_fds=(report_w, lifeline_r), env={"PATH": SANDBOX_PATH},
        )
    except BaseException:
        os.close(lifeline_w)
        raise
    finally:
        os.close(report_w)
        os.close(lifeline_r)
    timed_out = False
    try:
        if stdin is not None:
            proc.stdin.write(stdin.encode())
            proc.stdin.close()
        reads = asyncio.ensure_future(asyncio.gather(
            _read_bounded(proc.stdout, output_bytes), _read_bounded(proc.stderr, output_bytes), proc.wait()))
        done, _ = await asyncio.wait({reads}, timeout=wall)
        if not done:
            timed_out = True
            _kill_group(proc.pid)
            cgroup.kill()
        (out, out_cut), (err, err_cut), _ = await reads
    finally:
        if proc.returncode is None:  # cancelled by the caller: the work stops with it
            _kill_group(proc.pid)
        os.close(lifeline_w)
        with os.fdopen(report_r) as report:
            applied = report.read()
    return ExecResult(
        returncode=proc.returncode if proc.returncode is not None else -9,
        stdout=out.decode(errors="replace"), stderr=err.decode(errors="replace"),
        wall_s=time.monotonic() - start, timed_out=timed_out, truncated=out_cut or err_cut,
        confinement=json.loads(applied) if applied else [],
    )


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)
