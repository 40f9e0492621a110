"""Sandbox launcher: runs as its own single-threaded process, confines itself, then execs.

Invoked by `jitagent.sandbox` as `python -I -S sandbox_exec.py CONFIG_JSON -- ARGV...`.
In order: join the run's cgroups (so every later fork counts), rlimits, the run's own uid, then
either exec bubblewrap (config `bwrap`: the namespaces, fresh /proc and mounts are its job) or,
the fallback, unshare PID, mount and network namespaces itself: a fresh /proc, private tmpfs over
/var/tmp and /dev/shm, the workspace's disk as /tmp and the workspace at /tmp/ws. What applied is
reported on a pipe. The first process in a new PID namespace is its init: when it dies every
process in it dies, so a fork bomb cannot outlive the run.
"""

import ctypes
import json
import os
import resource
import signal
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
BWRAP_CONFINEMENT = ["bwrap", "userns", "pidns", "mountns", "netns", "ipcns", "utsns", "procfs"]
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp/ws", "LANG": "C.UTF-8",
       "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8"}

libc = ctypes.CDLL(None, use_errno=True)


def _call(fn, *args) -> bool:
    return fn(*args) == 0


def _mount(src: str, target: str, fstype: str | None, flags: int, data: str | None) -> bool:
    return _call(libc.mount, src.encode() if src else None, target.encode(),
                 fstype.encode() if fstype else None, flags, data.encode() if data else None)


def _join_cgroups(cgroups: dict[str, str]) -> list[str]:
    joined = []
    for label, procs in cgroups.items():
        try:
            with open(procs, "w") as f:
                f.write(str(os.getpid()))
            joined.append(label)
        except OSError:
            pass
    return joined


def _set_limits(limits: dict) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"],) * 2)
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits["open_files"],) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _confine_by_hand(workspace: str) -> list[str]:
    """The fallback without bwrap: namespaces and mounts set up here, where the kernel allows."""
    applied: list[str] = []
    if os.geteuid() != 0 or not _call(libc.unshare, CLONE_NEWNS | CLONE_NEWPID):
        os.chdir(os.path.join(workspace, "ws"))
        return applied
    # opened after unshare: a bind mount's source must belong to the caller's mount namespace
    disk_fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY)
    applied.append("pidns")
    pid = os.fork()
    if pid:  # the launcher waits for the namespace's init and mirrors its status
        _, status = os.waitpid(pid, 0)
        os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
    if _mount("", "/", None, MS_REC | MS_PRIVATE, None):
        ok = all(_mount("tmpfs", d, "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777")
                 for d in ("/var/tmp", "/dev/shm") if os.path.isdir(d))
        if ok and _mount(f"/proc/self/fd/{disk_fd}", "/tmp", None, MS_BIND, None) and \
                _mount("/tmp/ws", "/tmp/ws", None, MS_BIND, None):  # a mount point cannot be replaced
            applied.append("mountns")
        if _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None):
            applied.append("procfs")
    if _call(libc.unshare, CLONE_NEWNET):
        applied.append("netns")
    os.chdir("/tmp/ws" if "mountns" in applied else os.path.join(workspace, "ws"))
    os.close(disk_fd)
    return applied


def main() -> None:
    sep = sys.argv.index("--")
    config = json.loads(sys.argv[1])
    argv = sys.argv[sep + 1:]
    report = os.fdopen(config["report_fd"], "w") if config.get("report_fd") else None
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # die with the server, the fallback's waiting launcher too
    if os.getppid() != config["parent"]:
        os._exit(137)  # the server died before the line above: this process was handed to another parent
    applied = _join_cgroups(config["cgroups"])
    if config["bwrap"]:
        argv = config["bwrap"] + argv
        applied += BWRAP_CONFINEMENT
    else:
        applied += _confine_by_hand(config["workspace"])
    _set_limits(config["limits"])
    applied.append("rlimits")
    if config["uid"] is not None:
        os.setgroups([])
        os.setgid(config["uid"])
        os.setuid(config["uid"])
        applied.append("uid")
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # again: credential changes clear it
    if os.getpid() != 1 and os.getppid() != config["parent"]:  # pid 1: the fallback's init, its parent waits
        os._exit(137)
    if report:
        report.write(json.dumps(applied))
        report.close()
    os.execvpe(argv[0], argv, ENV)


if __name__ == "__main__":
    main()
