"""Run untrusted code (tool calls, harness `code` sections, tests) confined to a workspace.

Host-enforced: wall clock (the whole process group is killed), CPU seconds, address space,
file size, process count, no network, bounded output. The confinement itself happens in
`sandbox_exec.py`, a separate single-threaded process, so it is safe to call from a
threaded gRPC server.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import stat
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, Field

LAUNCHER = Path(__file__).with_name("sandbox_exec.py")


class SandboxLimits(BaseModel):
    wall_s: float = Field(10.0, gt=0, le=600)
    cpu_s: int = Field(10, ge=1, le=600)
    memory_mb: int = Field(512, ge=32, le=8192)
    file_mb: int = Field(16, ge=1, le=1024)
    processes: int = Field(32, ge=1, le=512)
    output_bytes: int = Field(8000, ge=256, le=1_000_000)


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

    def describe(self) -> str:
        """What the model sees as the observation of a run."""
        parts = []
        if self.stdout:
            parts.append(self.stdout.rstrip())
        if self.stderr:
            parts.append("[stderr]\n" + self.stderr.rstrip())
        if self.timed_out:
            parts.append(f"[killed: wall-clock limit {self.wall_s:.1f}s exceeded]")
        elif self.returncode < 0 or self.returncode >= 128:
            sig = -self.returncode if self.returncode < 0 else self.returncode - 128
            parts.append(f"[killed by signal {signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else sig}]")
        elif self.returncode:
            parts.append(f"[exit code {self.returncode}]")
        if self.truncated:
            parts.append("[output truncated]")
        return "\n".join(parts) or "(no output)"


def _world_accessible(path: str) -> bool:
    p = Path(path).resolve()
    return all(os.stat(d).st_mode & stat.S_IXOTH for d in [*p.parents]) and bool(os.stat(p).st_mode & stat.S_IXOTH)


def sandbox_python() -> str:
    """An interpreter the unprivileged sandbox user can execute (a venv under /root is not)."""
    if os.geteuid() != 0 or _world_accessible(sys.executable):
        return sys.executable
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.path.exists(candidate) and _world_accessible(candidate):
            return candidate
    raise RuntimeError("no python3 the sandbox user can execute; install Debian's python3")


class Workspace:
    """A per-task temporary directory; the only place sandboxed code may write."""

    def __init__(self, files: dict[str, str] | None = None, prefix: str = "jitagent-ws-"):
        self.path = Path(tempfile.mkdtemp(prefix=prefix))
        for name, content in (files or {}).items():
            self.write(name, content)

    def resolve(self, relative: str) -> Path:
        """A path inside the workspace, or ValueError for one that escapes it."""
        target = (self.path / relative).resolve()
        if target != self.path.resolve() and not target.is_relative_to(self.path.resolve()):
            raise ValueError(f"path {relative!r} is outside the workspace")
        return target

    def write(self, relative: str, content: str) -> Path:
        target = self.resolve(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content)
        return target

    def _open_to_sandbox_user(self) -> None:
        if os.geteuid() != 0:
            return
        for root, dirs, files in os.walk(self.path):
            for name in [*dirs, *files]:
                p = os.path.join(root, name)
                if not os.path.islink(p):
                    os.chmod(p, 0o777 if os.path.isdir(p) else 0o666)
        os.chmod(self.path, 0o777)

    async def run(self, argv: list[str], limits: SandboxLimits | None = None, stdin: str | None = None,
                  deadline: float | None = None) -> ExecResult:
        return await run_confined(argv, self, limits or SandboxLimits(), stdin=stdin, deadline=deadline)

    def close(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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
    """Run argv confined to the workspace. `deadline` (time.monotonic) caps the wall clock too."""
    wall = limits.wall_s
    if deadline is not None:
        wall = max(0.05, min(wall, deadline - time.monotonic()))
    workspace._open_to_sandbox_user()
    config = {
        "workspace": str(workspace.path),
        "report_fd": None,
        "limits": {"cpu_s": limits.cpu_s, "memory_bytes": limits.memory_mb << 20,
                   "file_bytes": limits.file_mb << 20, "processes": limits.processes},
    }
    report_r, report_w = os.pipe()
    config["report_fd"] = report_w
    start = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-I", str(LAUNCHER), json.dumps(config), "--", *argv,
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        start_new_session=True, pass_fds=(report_w,),
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )
    os.close(report_w)
    timed_out = False
    try:
        if stdin is not None:
            proc.stdin.write(stdin.encode())
            proc.stdin.close()
        reads = asyncio.ensure_future(asyncio.gather(
            _read_bounded(proc.stdout, limits.output_bytes),
            _read_bounded(proc.stderr, limits.output_bytes), proc.wait()))
        done, _ = await asyncio.wait({reads}, timeout=wall)
        if not done:
            timed_out = True
            _kill_group(proc.pid)
        (out, out_cut), (err, err_cut), _ = await reads
    finally:
        if proc.returncode is None:  # cancelled by the caller: the work stops with it
            _kill_group(proc.pid)
        with os.fdopen(report_r) as report:
            applied = report.read()
    return ExecResult(
        returncode=proc.returncode if proc.returncode is not None else -9,
        stdout=out.decode(errors="replace"), stderr=err.decode(errors="replace"),
        wall_s=time.monotonic() - start, timed_out=timed_out, truncated=out_cut or err_cut,
        confinement=json.loads(applied) if applied else [],
    )


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
