"""`jitagent serve` and `jitagent client ...`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from jitagent import DEFAULT_ADDRESS
from jitagent.cli import settings
from jitagent.cli.common import (
    TOKEN_ENV,
    api_key,
    common,
    output,
    parent_parser,
    result_line,
    secret_from,
    synthesis_config,
    task_from_args,
    task_options,
)
from jitagent.cli.options import CANDIDATES, HIDDEN, RUNTIME, SECONDS, USAGE, Bounded, Failure, OutOfRange
from jitagent.cli.settings import Setting
from jitagent.cli.terminal import visible


def address(text: str) -> str:
    """HOST:PORT with a port gRPC would not wrap around or default (it takes 99999 and -5 as other ports)."""
    host, colon, port = text.rpartition(":")
    if not (colon and host and port.isdigit() and 1 <= int(port) <= 65535):
        raise OutOfRange(f"expected HOST:PORT with a port from 1 to 65535, got {text!r}")
    return text


ADDRESS = Setting("--address", DEFAULT_ADDRESS, address, "the server (default: ${variable} or {default})",
                  metavar="HOST:PORT")
USER_ERRORS = ("INVALID_ARGUMENT", "NOT_FOUND", "ALREADY_EXISTS", "FAILED_PRECONDITION")


def server_config(args):
    """The ServerConfig `serve`'s settings make: every one of them lands in it (a test checks each) — a
    setting made from one of its fields by that field's name."""
    from jitagent.config.paths import data_dir
    from jitagent.doors.server import ServerConfig
    from jitagent.improvement.practice import PracticeConfig
    from jitagent.improvement.retrain import RetrainConfig
    from jitagent.solving.config import PipelineConfig

    own = settings.fields_of(args, settings.SERVE, settings.SERVER)
    return ServerConfig(
        **own, data_dir=args.data_dir or data_dir(), bank=args.bank, meta_model=args.meta_model,
        solver_model=args.solver_model, api_key=api_key(args),
        auth_token=secret_from(args.auth_token, args.auth_token_file, "--auth-token", TOKEN_ENV),
        log_format=args.log_format, pipeline=PipelineConfig(synthesis=synthesis_config(args),
                                                            retrain=RetrainConfig(every=args.retrain_every),
                                                            practice=PracticeConfig(tries=args.practice)))


def cmd_serve(args) -> int:
    from jitagent.config.logs import configure
    from jitagent.doors.server import JitAgentServer, StartupError

    config = server_config(args)
    configure(config.log_format)
    try:
        asyncio.run(JitAgentServer(config).serve_forever())
    except StartupError as exc:
        raise Failure(str(exc), exc.status) from None
    return 0


# --- client -------------------------------------------------------------------------------
def _run_client(args, use) -> int:
    """`use(client)` against the server; a call that fails is one line saying what to do."""
    import grpc

    from jitagent.protocol.client import JitAgentClient

    token = secret_from(args.token, args.token_file, "--auth-token", TOKEN_ENV)

    async def go():
        async with JitAgentClient(args.address, token=token) as client:
            return await use(client)

    try:
        return asyncio.run(go()) or 0
    except grpc.aio.AioRpcError as exc:
        raise client_failure(exc, args) from None


def client_failure(exc, args) -> Failure:
    code, details, address = exc.code().name, exc.details() or "", args.address
    if code == "UNAVAILABLE" and ("connect" in details.lower() or "unavailable" in details.lower()):
        return Failure(f"cannot reach a server at {address} ({details.splitlines()[0]}); "
                       f"start one with `jitagent serve` or pass --address HOST:PORT")
    if code == "DEADLINE_EXCEEDED":
        return Failure(f"no answer from {address} within --timeout {args.timeout} s; the server stopped the "
                       f"work (allow more time with --timeout)")
    if code == "UNAUTHENTICATED":
        return Failure(f"{address} wants a bearer token: --auth-token-file FILE or {TOKEN_ENV}")
    from jitagent.protocol.sdk import violations_of

    fields = "; ".join(f"{f}: {d}" for f, d in violations_of(exc))
    return Failure(f"{code}: {fields or details}", USAGE if code in USER_ERRORS else RUNTIME)


def _emit(message) -> None:
    from google.protobuf.json_format import MessageToDict

    print(json.dumps(MessageToDict(message, preserving_proto_field_name=True)), flush=True)


def flat(result) -> dict:
    """A result on the wire as the flat record's JSON (`Solved`), as `solve --json` and HTTP give it."""
    from jitagent.protocol.records import from_message
    from jitagent.solving.result import Solved

    return from_message(Solved, result).model_dump(mode="json")


def reward_text(msg) -> str:
    """A result's reward, or `unverified` when nothing checked it (absent: unknown, not 0)."""
    return f"{msg.reward:g}" if msg.HasField("reward") else "unverified"


def cmd_health(args) -> int:
    async def use(client):
        status = await client.health(timeout=args.timeout or 5.0)
        print(json.dumps({"status": status}) if args.json else status)
        return 0 if status == "SERVING" else RUNTIME

    return _run_client(args, use)


def cmd_solve(args) -> int:
    from jitagent.cli.progress import heartbeat

    task = task_from_args(args)

    async def use(client):
        async for event in heartbeat(client.solve(task, n=args.n or 0, timeout=args.timeout)):
            if args.json and event.WhichOneof("event") == "result":  # the flat record every door gives
                print(json.dumps(flat(event.result)), flush=True)
            elif args.json:
                _emit(event)
            else:  # the events say how it goes (stderr); the result line is the result (stdout)
                result = event.WhichOneof("event") == "result"
                print(visible(event_line(event)), file=sys.stdout if result else sys.stderr, flush=True)

    return _run_client(args, use)


def event_line(event) -> str:
    """One Solve event as `client solve` shows it, and as local `solve`/`synthesize` show theirs."""
    from jitagent.protocol.tasks import enum_name
    from jitagent.v1 import jitagent_pb2 as pb

    which = event.WhichOneof("event")
    if which == "result":
        return result_line(flat(event.result))
    if which == "step":
        return f"step/{enum_name(pb.StepKind, event.step.kind)}: {event.step.text[:200]}"
    if which == "chosen":
        shown = event.chosen.examples
        return (f"chosen: {event.chosen.name} ({event.chosen.harness_id})"
                + (f", shown {len(shown)} verified solution(s): {', '.join(shown)}" if shown else ""))
    return f"{which}: {getattr(event, which).text[:200]}"


def cmd_synthesize(args) -> int:
    from jitagent.protocol.tasks import enum_name
    from jitagent.v1 import jitagent_pb2 as pb

    task = task_from_args(args)

    async def use(client):
        reply = await client.synthesize([task], n=args.n or 0, timeout=args.timeout)
        if args.json:
            _emit(reply)
            return
        for r in reply.results:
            print(visible(f"run_id={r.run_id} route={enum_name(pb.Route, r.route)} "
                          f"harness={r.harness.name} ({r.harness.id}) cluster={r.cluster} "
                          f"candidates={len(r.candidates)}"))

    return _run_client(args, use)


def cmd_stream(args) -> int:
    from jitagent.cli.progress import units
    from jitagent.tasks.task import load_suite

    tasks = load_suite(str(args.file))

    async def use(client):
        with units("tasks", len(tasks)) as progress:
            async for response in client.stream(tasks, n=args.n or 0, timeout=args.timeout):
                if response.HasField("error"):
                    line = f"#{response.sequence} {response.task_id}: failed: {response.error.message}"
                else:
                    line = (f"#{response.sequence} {response.task_id}: run_id={response.run_id} "
                            f"{response.result.harness_name} reward={reward_text(response.result)}")
                if args.json:
                    _emit(response)
                else:
                    print(visible(line), flush=True)
                progress.done(line if args.json else "")

    return _run_client(args, use)


def cmd_report(args) -> int:
    async def use(client):
        reply = await client.report_outcome(args.run_id, args.reward, detail=args.detail, wall_s=args.wall_s,
                                            prompt_tokens=args.prompt_tokens,
                                            completion_tokens=args.completion_tokens, timeout=args.timeout)
        if args.json:
            _emit(reply)
        else:
            verb = "promoted" if reply.promoted else "recorded"
            print(visible(f"{reply.cluster}: {verb} {reply.harness_id} ({reply.reason}); "
                          f"incumbent {reply.incumbent_id or 'none yet'}"))

    return _run_client(args, use)


def connection() -> argparse.ArgumentParser:
    p = parent_parser()
    settings.add_arguments(p, [ADDRESS])
    # spelled as `serve` spells it, for the one token they share; the old spelling still works
    p.add_argument("--auth-token-file", dest="token_file", type=Path, metavar="FILE",
                   help=f"a file holding the server's bearer token (or set {TOKEN_ENV})")
    p.add_argument("--token-file", dest="token_file", type=Path, help=HIDDEN)
    p.add_argument("--auth-token", "--token", dest="token", help=HIDDEN)  # refused: a secret in argv
    p.add_argument("--timeout", type=SECONDS, metavar="S",
                   help="seconds the call may take (default: no limit)")
    return p


def add_commands(sub) -> None:
    p = sub.add_parser("serve", help="run the server: gRPC, and with --openai-port an OpenAI-compatible API",
                       parents=[common()])
    settings.add_arguments(p, settings.SERVE, config=True)
    p.set_defaults(func=cmd_serve)

    shared = [common(), connection(), output()]
    client = sub.add_parser("client", help="talk to a running server", parents=shared)
    cmds = client.add_subparsers(dest="client_command", required=True, metavar="COMMAND")
    leaves = {}
    for name, func, help_text, own in (
        ("health", cmd_health, "SERVING or NOT_SERVING", []),
        ("solve", cmd_solve, "solve one task, streaming what happens", [task_options(checks=True)]),
        ("synthesize", cmd_synthesize, "the harness the server would run for a task",
         [task_options(checks=False)]),
        ("stream", cmd_stream, "many tasks from a JSONL file, one after another", []),
        ("report", cmd_report, "how a run went, where the server could not verify it", []),
    ):
        leaves[name] = cmds.add_parser(name, help=help_text, parents=shared + own)
        leaves[name].set_defaults(func=func)
    for name in ("solve", "synthesize", "stream"):
        leaves[name].add_argument("--n", type=CANDIDATES, help="candidates if it synthesizes (default: the "
                                                               "server's --n)")
    leaves["stream"].add_argument("file", type=Path, help="tasks JSONL")
    report = leaves["report"]
    report.add_argument("run_id", help="the run_id of a solve, stream or synthesize result")
    report.add_argument("--reward", type=Bounded(float, 0, 1), required=True, help="how it went")
    report.add_argument("--detail", default="", help="what was checked")
    report.add_argument("--wall-s", type=Bounded(float, 0),
                        help="how long it ran (default: the server's measurement)")
    tokens = Bounded(int, 0, 2**32 - 1)
    report.add_argument("--prompt-tokens", type=tokens, help="prompt tokens it took (default: the server's "
                                                             "count; absent where unknown)")
    report.add_argument("--completion-tokens", type=tokens, help="completion tokens it took (default: the "
                                                                 "server's count; absent where unknown)")
