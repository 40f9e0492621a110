"""`jitagent serve` and `jitagent client ...`."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
from pathlib import Path

from google.protobuf.json_format import MessageToDict
from rich.console import Console
from rich.progress import Progress

from jitagent.client import DEFAULT_ADDRESS, JitAgentClient
from jitagent.fleet.cli import add_bank_argument

console = Console(stderr=True)
TOKEN_ENV = "JITAGENT_AUTH_TOKEN"


def token_from(flag: str | None, file: Path | None, what: str) -> str | None:
    """A secret from a file or the environment, never from argv: any process that can read
    /proc/PID/cmdline would read it there. SystemExit with one line for the old flag or a bad file."""
    if flag is not None:
        raise SystemExit(f"{what} puts the secret in argv, where /proc shows it to every process; "
                         f"use {what}-file FILE or the {TOKEN_ENV} environment variable")
    if file is None:
        return os.environ.get(TOKEN_ENV) or None
    try:
        token = file.read_text().strip()
    except OSError as exc:
        raise SystemExit(f"{what}-file {file}: {exc.strerror}") from None
    if not token:
        raise SystemExit(f"{what}-file {file}: empty")
    return token


def cmd_serve(args) -> int:
    from jitagent.paths import data_dir
    from jitagent.pipeline import PipelineConfig
    from jitagent.server.app import JitAgentServer, ServerConfig, StartupError
    from jitagent.synthesis.synthesize import SynthesisConfig

    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    config = ServerConfig(host=args.host, port=args.port, data_dir=args.data_dir or data_dir(), bank=args.bank,
                          meta_model=args.meta_model,
                          solver_model=args.solver_model, concurrency=args.concurrency, max_queue=args.max_queue,
                          auth_token=token_from(args.auth_token, args.auth_token_file, "--auth-token"),
                          tls_cert=args.tls_cert, tls_key=args.tls_key,
                          metrics_port=args.metrics_port, grace_s=args.grace,
                          pipeline=PipelineConfig(synthesis=SynthesisConfig(n=args.n, dry_run=not args.no_dry_run)))
    try:
        asyncio.run(JitAgentServer(config).serve_forever())
    except StartupError as exc:
        print(f"jitagent serve: {exc}", file=sys.stderr)
        return 1
    return 0


def _client(args) -> JitAgentClient:
    return JitAgentClient(args.address, token=token_from(args.token, args.token_file, "--token"))


def _emit(args, message) -> None:
    value = MessageToDict(message, preserving_proto_field_name=True)
    print(json.dumps(value, indent=None if args.json else 2))


def cmd_health(args) -> int:
    async def go():
        async with _client(args) as client:
            return await client.health()
    status = asyncio.run(go())
    print(json.dumps({"status": status}) if args.json else status)
    return 0 if status == "SERVING" else 1


def cmd_solve(args) -> int:
    async def go():
        async with _client(args) as client:
            async for event in client.solve(args.text, n=args.n, timeout=args.timeout):
                if args.json:
                    _emit(args, event)
                elif event.kind == "result":
                    run = event.result.run
                    print(f"result: route={event.result.synthesis.route} harness={event.result.synthesis.harness.name} "
                          f"answer={run.answer!r} reward={run.reward} verdict={run.verdict[:100]!r}")
                else:
                    print(f"{event.kind}{'/' + event.step_kind if event.step_kind else ''}: {event.text[:200]}")
    asyncio.run(go())
    return 0


def cmd_synthesize(args) -> int:
    async def go():
        async with _client(args) as client:
            _emit(args, await client.synthesize([args.text], n=args.n, timeout=args.timeout))
    asyncio.run(go())
    return 0


def cmd_stream(args) -> int:
    from jitagent.tasks import load_suite

    tasks = load_suite(str(args.file))

    async def go():
        async with _client(args) as client:
            with Progress(console=console, transient=True) as bar:
                job = bar.add_task("tasks", total=len(tasks))
                async for response in client.stream(tasks, n=args.n, timeout=args.timeout):
                    _emit(args, response) if args.json else print(
                        f"#{response.sequence} {response.task_id}: {response.result.synthesis.route} "
                        f"{response.result.synthesis.harness.name} reward={response.result.run.reward} {response.error}")
                    bar.advance(job)
    asyncio.run(go())
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("serve", help="run the gRPC server")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=50051)
    p.add_argument("--data-dir", type=Path)
    add_bank_argument(p)
    p.add_argument("--meta-model", default="embedded", help="embedded | model name | OpenAI-compatible URL (vllm serve)")
    p.add_argument("--solver-model", help="default: the meta-model")
    p.add_argument("--concurrency", type=int, default=1)
    p.add_argument("--max-queue", type=int, default=64)
    p.add_argument("--n", type=int, default=3, help="default candidates per task")
    p.add_argument("--no-dry-run", action="store_true")
    p.add_argument("--auth-token-file", type=Path,
                   help=f"a file holding the bearer token clients must send (or set {TOKEN_ENV})")
    p.add_argument("--auth-token", help=argparse.SUPPRESS)  # refused: a secret in argv
    p.add_argument("--tls-cert", type=Path)
    p.add_argument("--tls-key", type=Path)
    p.add_argument("--metrics-port", type=int)
    p.add_argument("--grace", type=float, default=10.0, help="seconds in-flight RPCs get on SIGTERM")
    p.set_defaults(func=cmd_serve)

    client = sub.add_parser("client", help="talk to a running server")
    client.add_argument("--address", default=DEFAULT_ADDRESS)
    client.add_argument("--token-file", type=Path,
                        help=f"a file holding the server's bearer token (or set {TOKEN_ENV})")
    client.add_argument("--token", help=argparse.SUPPRESS)  # refused: a secret in argv
    client.add_argument("--json", action="store_true")
    client.add_argument("--timeout", type=float)
    cmds = client.add_subparsers(dest="client_command", required=True)
    cmds.add_parser("health").set_defaults(func=cmd_health)
    for name, func in (("solve", cmd_solve), ("synthesize", cmd_synthesize)):
        q = cmds.add_parser(name)
        q.add_argument("text")
        q.add_argument("--n", type=int, default=0)
        q.set_defaults(func=func)
    q = cmds.add_parser("stream")
    q.add_argument("file", type=Path, help="tasks JSONL")
    q.add_argument("--n", type=int, default=0)
    q.set_defaults(func=cmd_stream)
