"""Red team: hostile programs through the real sandbox (bubblewrap, cgroups, the uid pool) and the
server-side tools, each asserting the attack was contained — on the host, not only in the output.

A program prints `BLOCKED <why>` when its attack fails and `ESCAPED` when it succeeds; a case passes
only with BLOCKED and without ESCAPED. Needs root and a working bwrap (install.sh installs it).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from jitagent.sandbox.host import UID_POOL, is_root, owner_tag
from jitagent.sandbox.launch import (
    FULL_CONFINEMENT,
    WORKSPACES,
    SandboxLimits,
    Workspace,
    bwrap_works,
    sandbox_python,
)
from jitagent.sandbox.tools import ToolBox
from jitagent.tasks.task import Task
from jitagent.tasks.verifiers import verify

pytestmark = pytest.mark.skipif(not (is_root() and bwrap_works()),
                                reason="full confinement needs root and a working bwrap (see install.sh)")

LIMITS = SandboxLimits(wall_s=8, cpu_s=6, memory_mb=256, processes=16)
PY = sandbox_python()


def run(code: str, limits: SandboxLimits = LIMITS, workspace: Workspace | None = None):
    """Run a Python program in a fresh (or the given) workspace; the result and its output."""
    async def go(ws):
        return await ws.run([PY, "-c", textwrap.dedent(code)], limits)
    if workspace is not None:
        return asyncio.run(go(workspace))
    with Workspace() as ws:
        return asyncio.run(go(ws))


def contained(result) -> bool:
    return "BLOCKED" in result.stdout and "ESCAPED" not in result.stdout


def processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@pytest.fixture
def host_process():
    """A host process (as uid nobody) holding a secret in its argv and environment."""
    secret = f"host-secret-{uuid.uuid4().hex}"
    proc = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                             "sh", "-c", "sleep 60", secret], env={"SECRET": secret, "PATH": "/usr/bin:/bin"})
    yield proc, secret
    proc.kill()
    proc.wait()


def test_runs_get_full_confinement():
    result = run("print('BLOCKED nothing to attack')")
    assert set(FULL_CONFINEMENT) <= set(result.confinement), result.confinement


# --- /proc: the host's processes, their command lines, environments and memory ------------------

def test_proc_shows_only_the_run(host_process):
    result = run("""
        import os
        pids = [p for p in os.listdir('/proc') if p.isdigit()]
        print('BLOCKED' if len(pids) <= 4 else 'ESCAPED', pids)
    """)
    assert contained(result), result.stdout


def test_host_command_lines_and_environments_are_unreadable(host_process):
    proc, secret = host_process
    result = run(f"""
        import glob
        seen = ''
        for path in glob.glob('/proc/*/cmdline') + glob.glob('/proc/*/environ'):
            try:
                seen += open(path, 'rb').read().decode(errors='replace')
            except OSError:
                pass
        print('ESCAPED' if {secret[::-1]!r}[::-1] in seen else 'BLOCKED')  # reversed: not in its own argv
    """)
    assert contained(result)


def test_memory_of_a_host_process_of_another_uid_cannot_be_opened(host_process):
    proc, _ = host_process
    result = run(f"""
        try:
            open('/proc/{proc.pid}/mem', 'r+b'); print('ESCAPED')
        except OSError as exc:
            print('BLOCKED', exc)
    """)
    assert contained(result) and proc.poll() is None


def test_the_servers_token_is_not_in_the_sandbox(monkeypatch):
    monkeypatch.setenv("JITAGENT_AUTH_TOKEN", "tok-" + uuid.uuid4().hex)
    token = os.environ["JITAGENT_AUTH_TOKEN"]
    result = run(f"""
        import glob, os
        seen = str(dict(os.environ))
        for path in glob.glob('/proc/*/cmdline') + glob.glob('/proc/*/environ'):
            try:
                seen += open(path, 'rb').read().decode(errors='replace')
            except OSError:
                pass
        print('ESCAPED' if {token[::-1]!r}[::-1] in seen else 'BLOCKED')
    """)
    assert contained(result)


# --- a second, concurrent sandbox as the target -------------------------------------------------

def run_pair(victim_code: str, attacker_code: str, victim_files: dict[str, str] | None = None):
    async def go():
        with Workspace(victim_files) as victim_ws, Workspace() as attacker_ws:
            victim = asyncio.create_task(victim_ws.run([PY, "-c", textwrap.dedent(victim_code)], LIMITS))
            await asyncio.sleep(0.8)  # the victim is up
            attacker = await attacker_ws.run([PY, "-c", textwrap.dedent(attacker_code)], LIMITS)
            return await victim, attacker, victim_ws
    return asyncio.run(go())


def test_another_sandbox_workspace_is_out_of_reach():
    secret = uuid.uuid4().hex
    victim, attacker, victim_ws = run_pair(
        "import time; time.sleep(2.5); print(open('secret.txt').read())",
        """
        import glob, os
        found = []
        for path in glob.glob('/proc/*/cwd') + glob.glob('/proc/*/root'):
            try:
                for name in os.listdir(path):
                    if name == 'secret.txt':
                        found.append(open(os.path.join(path, name)).read())
                        open(os.path.join(path, name), 'w').write('changed')
            except OSError:
                pass
        found += glob.glob('/tmp/jitagent-workspaces*/*')
        print('ESCAPED' if found else 'BLOCKED', found)
        """, {"secret.txt": secret})
    assert contained(attacker) and victim.stdout.strip() == secret


def test_another_sandbox_cannot_be_signalled_or_traced():
    victim, attacker, _ = run_pair(
        "import time; time.sleep(2.5); print('alive')",
        """
        import ctypes, os, signal
        libc = ctypes.CDLL(None, use_errno=True)
        traced = [pid for pid in range(2, 400) if libc.ptrace(16, pid, 0, 0) == 0 and pid != os.getpid()]
        try:
            os.kill(-1, signal.SIGKILL)  # every process this uid may signal: only its own run
        except OSError:
            pass
        print('ESCAPED' if traced else 'BLOCKED', traced)
        """)
    assert victim.stdout.strip() == "alive" and "ESCAPED" not in attacker.stdout


def test_one_runs_process_limit_does_not_fail_another_runs_forks():
    victim, attacker, _ = run_pair(
        """
        import os, time
        kids = []
        for _ in range(30):
            try:
                pid = os.fork()
            except OSError:
                break
            if pid == 0:
                time.sleep(3); os._exit(0)
            kids.append(pid)
        print('held', len(kids))
        """,
        """
        import os
        ok = 0
        for _ in range(8):
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0); ok += 1
        print('BLOCKED forks of this run unaffected' if ok == 8 else 'ESCAPED')
        """)
    assert contained(attacker) and "held" in victim.stdout


# --- limits per run ---------------------------------------------------------------------------

def test_memory_across_processes_is_capped_for_the_whole_run():
    result = run("""
        import subprocess, sys
        child = "b = b'x' * (100 << 20); import time; time.sleep(1.5); print('held')"
        procs = [subprocess.Popen([sys.executable, '-c', child], stdout=subprocess.PIPE, text=True)
                 for _ in range(4)]
        held = sum(p.communicate()[0].count('held') for p in procs)
        print('BLOCKED' if held <= 2 else 'ESCAPED', held)
    """, SandboxLimits(wall_s=10, cpu_s=8, memory_mb=256, processes=16))
    assert contained(result), result.stdout + result.stderr


def test_memory_bomb_is_contained():
    result = run("""
        try:
            x = b'x' * (4 << 30); print('ESCAPED')
        except MemoryError:
            print('BLOCKED')
    """)
    assert contained(result) or (result.returncode != 0 and "ESCAPED" not in result.stdout)


def test_fork_bomb_is_contained_and_leaves_no_process():
    marker = f"fork-bomb-{uuid.uuid4().hex}"
    bomb = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
    with Workspace() as ws:
        result = asyncio.run(ws.run([PY, "-c", bomb, marker], SandboxLimits(wall_s=2, processes=16)))
    assert result.timed_out
    time.sleep(0.3)
    assert processes_with(marker) == []


def test_infinite_loop_is_killed_on_the_wall_clock():
    start = time.monotonic()
    result = run("while True: pass", SandboxLimits(wall_s=1.5, cpu_s=10))
    assert result.timed_out and time.monotonic() - start < 5


def test_a_background_process_does_not_outlive_its_run():
    marker = f"{uuid.uuid4().int % 10**6}.25"
    with Workspace() as ws:
        command = f"setsid sleep {marker} & sleep 0.2; echo BLOCKED"
        result = asyncio.run(ws.run(["/bin/sh", "-c", command], LIMITS))
    time.sleep(0.2)
    assert "BLOCKED" in result.stdout and processes_with(marker) == []


def test_disk_fill_stops_at_the_workspace_cap():
    result = run("""
        written = 0
        try:
            for i in range(10):
                with open(f'big{i}', 'wb') as f:
                    for _ in range(15):
                        f.write(b'x' * (1 << 20)); f.flush(); written += 1 << 20
            print('ESCAPED', written)
        except OSError as exc:
            print('BLOCKED' if written <= 64 << 20 else 'ESCAPED', written, exc)
    """, SandboxLimits(wall_s=8, memory_mb=512, file_mb=16))
    assert contained(result), result.stdout


def fill(prefix: str, files: int, errors: str, limits: SandboxLimits):
    """Write `files` files of 15 MiB at `prefix`N; past 64 MiB written the cap has not held."""
    return run(f"""
        written = 0
        try:
            for i in range({files}):
                open(f'{prefix}{{i}}', 'wb').write(b'x' * (15 << 20)); written += 15 << 20
            print('ESCAPED', written)
        except {errors} as exc:
            print('BLOCKED' if written <= 64 << 20 else 'ESCAPED', written, exc)
    """, limits)


def test_tmp_counts_against_the_same_cap():
    result = fill("/tmp/fill", 10, "OSError", SandboxLimits(wall_s=8, memory_mb=512, file_mb=16))
    assert contained(result), result.stdout


def test_tmpfs_ram_in_dev_shm_is_capped():
    limits = SandboxLimits(wall_s=8, memory_mb=64, file_mb=16)
    result = fill("/dev/shm/fill", 12, "(OSError, MemoryError)", limits)
    assert "ESCAPED" not in result.stdout and ("BLOCKED" in result.stdout or result.returncode != 0)


def test_inode_fill_stops_at_the_cap():
    result = run("""
        made = 0
        try:
            for i in range(40000):
                open(f'f{i}', 'w').close(); made += 1
            print('ESCAPED', made)
        except OSError as exc:
            print('BLOCKED', made, exc)
    """)
    assert contained(result)


def test_open_files_are_capped():
    result = run("""
        fds = []
        try:
            while len(fds) < 15000:
                fds.append(open('/dev/null'))
            print('ESCAPED', len(fds))
        except OSError as exc:
            print('BLOCKED' if len(fds) <= 256 else 'ESCAPED', len(fds), exc)
    """)
    assert contained(result)


# --- the file system outside the workspace ------------------------------------------------------

OUTSIDE = ("/etc", "/usr", "", "/var/tmp", "/var/lib", "/run", "/run/lock", "/root", "/home", "/dev", "/proc",
           "/sys/fs/cgroup")


@pytest.mark.parametrize("path", [f"{d}/jitagent-escape" for d in OUTSIDE])
def test_writes_outside_the_workspace_never_reach_the_host(path):
    result = run(f"""
        try:
            open({path!r}, 'w').write('x'); print('wrote (inside the sandbox only?)')
        except OSError as exc:
            print('BLOCKED', exc)
    """)
    assert not os.path.exists(path)
    assert "BLOCKED" in result.stdout


def test_tmp_is_private_and_vanishes_with_the_run():
    name = f"jitagent-escape-{uuid.uuid4().hex}"
    with Workspace() as ws:
        first = run(f"for d in ('/tmp', '/dev/shm'): open(f'{{d}}/{name}', 'w').write('x')\nprint('ok')",
                    workspace=ws)
        second = run(f"import os; print('ESCAPED' if os.path.exists('/tmp/{name}') else 'BLOCKED')",
                     workspace=ws)
    assert first.stdout.strip() == "ok" and contained(second)
    assert not os.path.exists(f"/tmp/{name}") and not os.path.exists(f"/dev/shm/{name}")


def test_host_secrets_are_unreadable():
    result = run("""
        import os
        for path in ['/etc/shadow', '/root', '/proc/1/root/root', '/work', '/tmp/jitagent-workspaces-0']:
            try:
                data = os.listdir(path) if os.path.isdir(path) else open(path).read()
                print('ESCAPED', path)
            except OSError as exc:
                print('BLOCKED', path, type(exc).__name__)
    """)
    assert contained(result) and result.stdout.count("BLOCKED") == 5


def test_the_workspace_mount_cannot_be_swapped_for_a_link():
    with Workspace({"keep.txt": "kept"}) as ws:
        result = run("""
            import os, shutil
            try:
                shutil.rmtree('/tmp/ws'); os.symlink('/etc', '/tmp/ws'); print('ESCAPED')
            except OSError as exc:
                print('BLOCKED', exc)
        """, workspace=ws)
        read = asyncio.run(ToolBox(ws, ["read_file"]).call("read_file", {"path": "passwd"}))
        assert "ESCAPED" not in result.stdout and ws.path.is_dir() and not ws.path.is_symlink()
    assert not read.ok


def test_symlinks_to_host_files_are_not_followed_by_the_servers_tools():
    with Workspace() as ws:
        run("import os; os.symlink('/etc/passwd', 'pw'); os.symlink('/etc', 'etc')", workspace=ws)
        box = ToolBox(ws, ["read_file", "write_file", "list_dir"])
        read = asyncio.run(box.call("read_file", {"path": "pw"}))
        write = asyncio.run(box.call("write_file", {"path": "etc/jitagent-escape", "content": "x"}))
        listed = asyncio.run(box.call("list_dir", {"path": "etc"}))
    assert not read.ok and "root:" not in read.output
    assert not write.ok and not os.path.exists("/etc/jitagent-escape")
    assert not listed.ok


def test_hardlinks_to_host_files_are_refused_and_ownership_never_leaks():
    before = os.stat("/etc/passwd")
    with Workspace() as ws:
        result = run("""
            import os
            try:
                os.link('/etc/passwd', 'pw'); print('ESCAPED')
            except OSError as exc:
                print('BLOCKED', exc)
        """, workspace=ws)
        run("print('a second run re-owns the workspace')", workspace=ws)
    after = os.stat("/etc/passwd")
    assert contained(result) and (after.st_uid, after.st_mode) == (before.st_uid, before.st_mode)


def test_a_fifo_never_blocks_the_servers_file_tools():
    with Workspace() as ws:
        run("import os; os.mkfifo('pipe')", workspace=ws)
        box = ToolBox(ws, ["read_file", "write_file"])

        async def both():
            calls = [box.call("read_file", {"path": "pipe"}),
                     box.call("write_file", {"path": "pipe", "content": "x"})]
            return await asyncio.wait_for(asyncio.gather(*calls), 5)
        start = time.monotonic()
        read, write = asyncio.run(both())
    assert not read.ok and not write.ok and time.monotonic() - start < 2


def test_a_huge_file_is_read_only_up_to_the_bound():
    with Workspace() as ws:
        run("open('big.txt', 'w').write('y' * (40 << 20))", SandboxLimits(file_mb=64), workspace=ws)
        read = asyncio.run(ToolBox(ws, ["read_file"]).call("read_file", {"path": "big.txt"}))
    assert read.ok and len(read.output) < 10_000 and read.output.endswith("[truncated]")


# --- network ----------------------------------------------------------------------------------

@pytest.fixture
def host_listeners(tmp_path):
    """A TCP and a UDP socket on the host's loopback, a unix socket by path and an abstract one."""
    tcp = socket.socket()
    tcp.bind(("127.0.0.1", 0))
    tcp.listen()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    udp.setblocking(False)
    unix_path = f"/tmp/jitagent-red-team-{uuid.uuid4().hex}.sock"
    by_path = socket.socket(socket.AF_UNIX)
    by_path.bind(unix_path)
    by_path.listen()
    abstract_name = f"\0jitagent-red-team-{uuid.uuid4().hex}"
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(abstract_name)
    abstract.listen()
    for s in (tcp, by_path, abstract):
        s.setblocking(False)
    yield {"tcp": tcp, "udp": udp, "unix": (by_path, unix_path), "abstract": (abstract, abstract_name)}
    for s in (tcp, udp, by_path, abstract):
        s.close()
    os.unlink(unix_path)


def nothing_arrived(sock) -> bool:
    try:
        sock.accept() if sock.type == socket.SOCK_STREAM else sock.recv(100)
    except BlockingIOError:
        return True
    return False


def attempt(code: str) -> str:
    return f"""
        import socket
        try:
            {code}
            print('ESCAPED')
        except OSError as exc:
            print('BLOCKED', exc)
    """


def test_tcp_to_the_hosts_loopback_is_unreachable(host_listeners):
    port = host_listeners["tcp"].getsockname()[1]
    result = run(attempt(f"socket.create_connection(('127.0.0.1', {port}), timeout=2)"))
    assert contained(result) and nothing_arrived(host_listeners["tcp"])


def test_udp_to_the_host_never_arrives(host_listeners):
    port = host_listeners["udp"].getsockname()[1]
    result = run(attempt(f"s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
                         f"s.sendto(b'x', ('127.0.0.1', {port})); s.sendto(b'x', ('10.0.0.1', {port}))"))
    time.sleep(0.2)
    assert nothing_arrived(host_listeners["udp"]) and "ESCAPED" not in result.stdout


def test_the_outside_network_is_unreachable():
    result = run(attempt("socket.create_connection(('1.1.1.1', 53), timeout=2)"))
    assert contained(result)


def test_dns_does_not_resolve():
    result = run(attempt("socket.getaddrinfo('example.com', 80)"))
    assert contained(result)


def test_raw_sockets_are_refused():
    result = run(attempt("socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)"))
    assert contained(result)


def test_a_unix_socket_by_path_on_the_host_is_unreachable(host_listeners):
    sock, path = host_listeners["unix"]
    result = run(attempt(f"s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect({path!r})"))
    assert contained(result) and nothing_arrived(sock)


def test_an_abstract_unix_socket_on_the_host_is_unreachable(host_listeners):
    sock, name = host_listeners["abstract"]
    result = run(attempt(f"s = socket.socket(socket.AF_UNIX); s.settimeout(2); s.connect({name!r})"))
    assert contained(result) and nothing_arrived(sock)


# --- privileges: signals, ptrace, setuid, namespaces, mounts ------------------------------------

@pytest.fixture
def sentinel():
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def test_host_processes_cannot_be_signalled(sentinel):
    result = run(f"""
        import os, signal
        try:
            os.kill({sentinel.pid}, signal.SIGKILL); print('ESCAPED')
        except OSError as exc:
            print('BLOCKED', exc)
        for pid in (1, -1):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    """)
    time.sleep(0.2)
    assert sentinel.poll() is None and "ESCAPED" not in result.stdout


def test_host_processes_cannot_be_traced(sentinel):
    result = run(f"""
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        attached = libc.ptrace(16, {sentinel.pid}, 0, 0) == 0  # PTRACE_ATTACH
        print('ESCAPED' if attached else f'BLOCKED errno {{ctypes.get_errno()}}')
    """)
    assert contained(result) and sentinel.poll() is None


def test_setuid_binaries_give_no_privilege():
    result = run("""
        import os, subprocess
        os.mkdir('m')
        mount = subprocess.run(['mount', '-t', 'tmpfs', 'none', 'm'], capture_output=True, text=True)
        su = subprocess.run(['su', '-c', 'id -u'], capture_output=True, text=True, stdin=subprocess.DEVNULL)
        nnp = [l for l in open('/proc/self/status') if l.startswith('NoNewPrivs')][0].split()[1]
        escaped = mount.returncode == 0 or su.stdout.strip() == '0' or nnp != '1'
        print('ESCAPED' if escaped else 'BLOCKED', mount.returncode, su.returncode, nnp)
    """)
    assert contained(result), result.stdout + result.stderr


@pytest.mark.parametrize("call", [
    "libc.unshare(0x10000000)",                          # CLONE_NEWUSER: a namespace where it is root
    "libc.unshare(0x00020000)",                          # CLONE_NEWNS
    "libc.unshare(0x40000000)",                          # CLONE_NEWNET
    "libc.mount(b'none', b'/tmp/ws', b'tmpfs', 0, None)",
    "libc.setns(os.open('/proc/1/ns/mnt', os.O_RDONLY), 0)",
    "libc.chroot(b'/tmp')",
])
def test_namespace_and_mount_calls_are_refused(call):
    result = run(f"""
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        try:
            print('ESCAPED' if {call} == 0 else f'BLOCKED errno {{ctypes.get_errno()}}')
        except OSError as exc:
            print('BLOCKED', exc)
    """)
    assert contained(result)


def test_cgroups_cannot_be_left():
    result = run("""
        import glob
        targets = glob.glob('/sys/fs/cgroup/**/cgroup.procs', recursive=True)
        print('ESCAPED' if targets else 'BLOCKED no cgroup files', targets[:3])
    """)
    assert contained(result)


def test_each_concurrent_run_has_its_own_uid():
    async def uids():
        with Workspace() as a, Workspace() as b:
            code = [PY, "-c", "import os, time; print(os.getuid()); time.sleep(0.5)"]
            return await asyncio.gather(a.run(code, LIMITS), b.run(code, LIMITS))
    first, second = asyncio.run(uids())
    a, b = int(first.stdout), int(second.stdout)
    assert a != b and a in UID_POOL and b in UID_POOL


# --- seccomp, what the run sees of bwrap, the kernel keyrings (issue 22) ---------------------------

# Each call with arguments that, without the filter, succeed or fail with another errno where the
# kernel allows it (those it refuses a process without capabilities anyway are EPERM either way).
SECCOMP_PROBE = """
    import ctypes, json, mmap, os, socket
    libc = ctypes.CDLL(None, use_errno=True)

    def call(nr, *args):
        ctypes.set_errno(0)
        result = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
        return ctypes.get_errno() if result == -1 else f'returned {result}'

    def i386_getpid():  # mov eax, 20; int 0x80; ret -- in a child: without that ABI it dies of SIGSEGV
        pid = os.fork()
        if pid == 0:
            code = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
            code.write(bytes.fromhex('b814000000cd80c3'))
            address = ctypes.addressof(ctypes.c_char.from_buffer(code))
            os._exit(1 if ctypes.CFUNCTYPE(ctypes.c_int)(address)() == -1 else 0)
        status = os.waitpid(pid, 0)[1]
        return 'EPERM' if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 1 else f'status {status}'

    def open_socket(family, kind=socket.SOCK_DGRAM):
        try:
            socket.socket(family, kind).close()
            return 'created'
        except OSError as exc:
            return exc.errno

    outcomes = {
        'ptrace': call(101, 0xFFFF, 0, 0, 0), 'mount': call(165, 0, 0, 0, 0, 0),
        'umount2': call(166, 0, 0xFFFF), 'pivot_root': call(155, 0, 0), 'unshare': call(272, 0),
        'setns': call(308, -1, 0), 'open_tree': call(428, -1, 0, 0), 'move_mount': call(429, -1, 0, -1, 0, 0),
        'fsopen': call(430, 0, 0), 'fsconfig': call(431, -1, 0, 0, 0, 0), 'fsmount': call(432, -1, 0, 0),
        'fspick': call(433, -1, 0, 0), 'mount_setattr': call(442, -1, 0, 0, 0, 0),
        'add_key': call(248, 0, 0, 0, 0, 0), 'request_key': call(249, 0, 0, 0, 0),
        'keyctl': call(250, 0, -4, 0),  # KEYCTL_GET_KEYRING_ID of the user keyring
        'bpf': call(321, 0xFFFF, 0, 0), 'perf_event_open': call(298, 0, 0, -1, -1, 0),
        'userfaultfd': call(323, 1),  # UFFD_USER_MODE_ONLY: allowed without privilege
        'kexec_load': call(246, 0, 0, 0, 0), 'kexec_file_load': call(320, -1, -1, 0, 0, 0),
        'init_module': call(175, 0, 0, 0), 'finit_module': call(313, -1, 0, 0),
        'open_by_handle_at': call(304, -1, 0, 0),
        'io_uring_setup': call(425, 8, ctypes.addressof(ctypes.create_string_buffer(120))),  # zeroed params
        'io_uring_enter': call(426, -1, 0, 0, 0, 0, 0), 'io_uring_register': call(427, -1, 0, 0, 0),
        'AF_VSOCK': open_socket(40, socket.SOCK_STREAM), 'AF_NETLINK': open_socket(16),
        'AF_PACKET': open_socket(17), 'AF_ALG': open_socket(38, socket.SOCK_SEQPACKET),
        'socketpair AF_NETLINK': call(53, 16, 2, 0, 0),
        'x32 getpid': call(0x40000000 | 39), 'i386 getpid': i386_getpid(),
    }
    status = dict(line.split(':', 1) for line in open('/proc/self/status'))
    print(status['Seccomp'].strip(), json.dumps(outcomes))
"""


def test_the_seccomp_filter_refuses_every_listed_call_with_eperm():
    result = run(SECCOMP_PROBE)
    mode, _, outcomes = result.stdout.partition(" ")
    outcomes = json.loads(outcomes)
    assert mode == "2" and "seccomp" in result.confinement, result.stdout + result.stderr  # 2: a filter
    assert {name: o for name, o in outcomes.items() if o not in (1, "EPERM")} == {}


def test_io_uring_cannot_be_set_up_so_it_makes_no_socket_of_a_refused_family():
    """io_uring's IORING_OP_SOCKET made netlink and vsock sockets past the family check (issue 27):
    the ring is never set up, so no operation of it runs."""
    result = run("""
        import ctypes, errno
        libc = ctypes.CDLL(None, use_errno=True)
        params = ctypes.create_string_buffer(120)  # struct io_uring_params, zeroed: a valid request
        fd = libc.syscall(ctypes.c_long(425), ctypes.c_long(8), ctypes.c_void_p(ctypes.addressof(params)))
        code = ctypes.get_errno()
        if fd >= 0:
            print('ESCAPED io_uring ring', fd)
        elif code in (errno.EPERM, errno.ENOSYS):
            print('BLOCKED', errno.errorcode[code])
        else:
            print('unexpected errno', code)
    """)
    assert contained(result), result.stdout + result.stderr


def test_unix_and_internet_sockets_are_still_allowed():
    result = run("""
        import socket
        for family in (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6):
            socket.socket(family, socket.SOCK_STREAM).close()
        a, b = socket.socketpair()
        a.sendall(b'BLOCKED nothing: all three families and a socketpair work'); print(b.recv(100).decode())
    """)
    assert contained(result), result.stderr


def test_what_the_run_reads_of_bwrap_and_itself_names_nothing_of_the_host():
    with Workspace() as ws:
        result = run("""
            import glob, os
            seen = []
            for path in ['/proc/1/cmdline', '/proc/1/environ', '/proc/1/mountinfo', '/proc/self/mountinfo',
                         '/proc/1/cgroup', '/proc/self/cgroup', '/proc/1/status', '/proc/self/environ']:
                try:
                    seen.append(open(path, 'rb').read().decode(errors='replace'))
                except OSError as exc:
                    seen.append(f'{path}: {exc.errno}')
            links = glob.glob('/proc/1/fd/*') + glob.glob('/proc/self/fd/*') + ['/proc/1/cwd', '/proc/1/exe']
            for link in links:
                try:
                    seen.append(os.readlink(link))
                except OSError:
                    pass
            print('BLOCKED read', len(seen)); print(repr(seen))
        """, workspace=ws)
        host = [str(ws.root), str(WORKSPACES), owner_tag(), f"{os.getpid()}."]
    assert contained(result) and not [h for h in host if h in result.stdout], result.stdout
    assert "os.execvp" in result.stdout  # PID 1's command line was read: the init's, not bwrap's


def test_the_memory_of_the_processes_a_run_sees_names_nothing_of_the_host(bench_script):
    """bwrap's init, as PID 1 of the run, held the host's mount table: another live workspace's host path,
    the server's pid in its name. The red-team script's probe (one source) searches every readable page of
    every other process the run sees."""
    contained, shown = asyncio.run(bench_script("redteam").init_memory())
    assert contained, shown


def test_a_key_a_run_adds_is_refused_and_never_seen_by_the_next_run_on_its_uid(monkeypatch):
    import jitagent.sandbox.host as sandbox_host
    monkeypatch.setattr(sandbox_host, "UID_POOL", range(UID_POOL[-1], UID_POOL[-1] + 1))  # one uid
    marker = f"jitagent-key-{uuid.uuid4().hex}"
    with Workspace() as ws:
        first = run(f"""
            import ctypes
            libc = ctypes.CDLL(None, use_errno=True)
            user_keyring = ctypes.c_long(-4)
            key = libc.syscall(248, b'user', {marker.encode()!r}, b'secret', 6, user_keyring)
            print('ESCAPED key', key) if key > 0 else print('BLOCKED errno', ctypes.get_errno())
        """, workspace=ws)
        second = run(f"""
            seen = ''
            for path in ('/proc/keys', '/proc/key-users'):
                try:
                    seen += open(path).read()
                except OSError:
                    pass
            print('ESCAPED' if {marker[::-1]!r}[::-1] in seen else 'BLOCKED')
        """, workspace=ws)
    assert contained(first) and "errno 1" in first.stdout and contained(second)


# --- the server's own work on untrusted input ---------------------------------------------------

def test_a_backtracking_regex_verifier_never_stalls_the_event_loop():
    task = Task(id="r", prompt="x", verifier={"kind": "regex", "pattern": "(a|aa)+$"})

    async def main():
        gaps, last = [], time.monotonic()

        async def heartbeat():
            nonlocal last
            while True:
                await asyncio.sleep(0.05)
                gaps.append(time.monotonic() - last)
                last = time.monotonic()
        beat = asyncio.create_task(heartbeat())
        with Workspace() as ws:
            verdict = await verify(task, "a" * 60 + "b", ws)
        beat.cancel()
        return verdict, max(gaps)
    verdict, worst_gap = asyncio.run(main())
    assert not verdict.passed and "ran past" in verdict.detail and worst_gap < 0.5


@pytest.mark.parametrize("files", [{"../../etc/evil": "x"}, {"/etc/evil": "x"}, {"": "x"}, {".": "x"},
                                   {"a\0b": "x"}, {"x" * 300: "x"}, {"a": "x", "a/b": "y"}])
def test_bad_task_file_names_are_refused_and_leave_no_workspace(files):
    def ours():
        return {p.name for p in WORKSPACES.iterdir() if p.name.startswith(owner_tag())}
    before = ours()
    with pytest.raises(ValueError, match="files"):
        Task(id="t", prompt="p", files=files)
    with pytest.raises((ValueError, OSError)):
        Workspace(files)
    assert ours() == before and not os.path.exists("/etc/evil")
