"""Sandbox launcher: runs as its own single-threaded process, confines itself, then execs.

Invoked by `jitagent.sandbox` as `python -I sandbox_exec.py CONFIG_JSON -- ARGV...`.
Steps, in order (each where the kernel allows it; what was applied is reported on a pipe):
new PID, mount and network namespaces; private tmpfs over /tmp, /var/tmp and /dev/shm so
writes outside the workspace vanish with the run; the workspace bind-mounted at /tmp/ws;
an unprivileged uid (so RLIMIT_NPROC applies: it is not enforced for root); rlimits; exec.
The first process in the new PID namespace is its init: when it dies every process in it
dies, so a fork bomb cannot outlive the run.
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
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
SANDBOX_UID = 65534  # nobody

libc = ctypes.CDLL(None, use_errno=True)


def _call(fn, *args) -> bool:
    return fn(*args) == 0


def _mount(src: str, target: str, fstype: str | None, flags: int, data: str | None) -> bool:
    return _call(libc.mount, src.encode() if src else None, target.encode(),
                 fstype.encode() if fstype else None, flags, data.encode() if data else None)


def main() -> None:
    sep = sys.argv.index("--")
    config = json.loads(sys.argv[1])
    argv = sys.argv[sep + 1:]
    report = os.fdopen(config["report_fd"], "w") if config.get("report_fd") else None
    applied: list[str] = []
    parent = os.getpid()
    unshared = os.geteuid() == 0 and _call(libc.unshare, CLONE_NEWNS | CLONE_NEWPID)
    # opened after unshare: a bind mount's source must belong to the caller's mount namespace
    ws_fd = os.open(config["workspace"], os.O_RDONLY | os.O_DIRECTORY)
    if unshared:
        applied.append("pidns")
        pid = os.fork()
        if pid:  # the launcher waits for the namespace's init and mirrors its status
            os.close(ws_fd)
            if report:
                report.close()
            _, status = os.waitpid(pid, 0)
            os._exit(os.waitstatus_to_exitcode(status) & 0xFF if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
        if _mount("", "/", None, MS_REC | MS_PRIVATE, None):
            ok = all(_mount("tmpfs", d, "tmpfs", 0, "size=64m,mode=1777") for d in ("/tmp", "/var/tmp", "/dev/shm")
                     if os.path.isdir(d))
            os.makedirs("/tmp/ws", exist_ok=True)
            if ok and _mount(f"/proc/self/fd/{ws_fd}", "/tmp/ws", None, MS_BIND, None):
                applied.append("mountns")
    if config.get("no_network", True) and os.geteuid() == 0 and _call(libc.unshare, CLONE_NEWNET):
        applied.append("netns")
    os.chdir("/tmp/ws" if "mountns" in applied else ws_fd)
    os.close(ws_fd)
    if os.geteuid() == 0:
        os.setgroups([])
        os.setgid(SANDBOX_UID)
        os.setuid(SANDBOX_UID)
        applied.append("uid")
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # set after setuid: credential changes clear it
    if os.getppid() != parent and "pidns" not in applied:
        os._exit(137)
    limits = config["limits"]
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_s"], limits["cpu_s"] + 1))
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"],) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    applied.append("rlimits")
    if report:
        report.write(json.dumps(applied))
        report.close()
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": os.getcwd(), "LANG": "C.UTF-8",
           "PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8"}
    os.execvpe(argv[0], argv, env)


if __name__ == "__main__":
    main()
