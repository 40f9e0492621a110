"""Sandbox launcher: runs as its own single-threaded process, confines itself, then execs.

Invoked by `jitagent.sandbox.launch` as `python -I -S launcher.py CONFIG_JSON -- ARGV...`.
In order: join the run's cgroups (so every later fork counts), rlimits, the run's own uid, then
either exec bubblewrap (config `bwrap`: the namespaces, fresh /proc and mounts are its job) or,
the fallback, unshare PID, mount and network namespaces itself: a fresh /proc, private tmpfs over
/var/tmp and /dev/shm, the workspace's disk as /tmp and the workspace at /tmp/ws. Either way the
run gets the seccomp filter (config `seccomp`, from `jitagent.sandbox.seccomp`): bwrap installs it, the
fallback installs it itself after no_new_privs. bwrap's options reach it on a file descriptor
(`--args`), never in a command line. With bwrap the run's PID 1 is `config["init"]`
(`jitagent.sandbox.launch.INIT`), not bwrap, whose memory holds the host's mount table. What applied is
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
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
RUN_UMASK = 0o022  # the server's own is 0o077 (jitagent.config.paths): a run's files are its to share
BWRAP_CONFINEMENT = ["bwrap", "userns", "pidns", "mountns", "netns", "ipcns", "utsns", "procfs"]
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp/ws", "LANG": "C.UTF-8",
       "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8"}

libc = ctypes.CDLL(None, use_errno=True)


def _call(fn, *args) -> bool:
    return fn(*args) == 0


def _mount(src: str, target: str, fstype: str | None, flags: int, data: str | None) -> bool:
    return _call(libc.mount, src.encode() if src else None, target.encode(),
                 fstype.encode() if fstype else None, flags, data.encode() if data else None)


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _memfd(data: bytes) -> int:
    """A file holding `data`, open without close-on-exec: bwrap reads it, then closes it."""
    fd = os.memfd_create("jitagent-bwrap", 0)
    os.set_inheritable(fd, True)
    os.write(fd, data)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _bwrap_argv(bwrap: list[str], seccomp: bytes | None, argv: list[str]) -> list[str]:
    """`bwrap --args FD -- ARGV`: its options, the seccomp filter's descriptor among them, on a file."""
    path, *options = bwrap
    if seccomp is not None:
        options += ["--seccomp", str(_memfd(seccomp))]
    return [path, "--args", str(_memfd(b"".join(o.encode() + b"\0" for o in options))), "--", *argv]


def _install_seccomp(program: bytes) -> bool:
    """The fallback's filter on this process and all it execs (no_new_privs first: no uid may lift it)."""
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.addressof(buffer))
    return _call(libc.prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) and \
        _call(libc.prctl, PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0)


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
    os.umask(RUN_UMASK)
    seccomp = bytes.fromhex(config["seccomp"]) if config["seccomp"] else None
    applied = _join_cgroups(config["cgroups"])
    if config["bwrap"]:
        argv = _bwrap_argv(config["bwrap"], seccomp, config["init"] + argv)
        applied += BWRAP_CONFINEMENT + (["seccomp"] if seccomp else [])
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
    if seccomp and not config["bwrap"] and _install_seccomp(seccomp):  # last: it refuses mount, unshare
        applied.append("seccomp")
    if report:
        report.write(json.dumps(applied))
        report.close()
    os.execvpe(argv[0], argv, ENV)


if __name__ == "__main__":
    main()
