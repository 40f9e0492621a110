"""`jitagent worker` and `jitagent queue put|results|stats`, and the fleet's shared flags."""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
from pathlib import Path

from jitagent.cli import settings
from jitagent.cli.common import (
    api_key,
    bank,
    bank_location,
    common,
    models,
    parent_parser,
    say,
    secret_from,
    synthesis_config,
)
from jitagent.cli.options import COUNT, USAGE, without_password
from jitagent.cli.settings import Setting

REDIS_ENV = "JITAGENT_REDIS_URL"
QUEUE_TOKEN_ENV = "JITAGENT_QUEUE_TOKEN"
REDIS = Setting("--redis", "redis://127.0.0.1:6379/0", str, "Redis URL (default: ${variable} or {default})",
                env=REDIS_ENV, argv_type=without_password(f"set {REDIS_ENV}"))
STREAM, GROUP = "jitagent:tasks", "jitagent"


def queue_options() -> argparse.ArgumentParser:
    """`--redis`, `--stream`, `--group`: a parent parser, so they are accepted after the subcommand too
    (`queue stats --redis URL`)."""
    p = parent_parser()
    settings.add_arguments(p, [REDIS])
    p.add_argument("--stream", default=STREAM, help=f"the tasks stream (default: {STREAM}); results in "
                                                    "STREAM:results, dead letters in STREAM:dead")
    p.add_argument("--group", default=GROUP, help=f"the workers' consumer group (default: {GROUP})")
    return p


def cmd_worker(args) -> int:
    from pydantic import ValidationError

    from jitagent.common.errors import one_line
    from jitagent.config.logs import configure
    from jitagent.doors.worker import Worker, WorkerConfig
    from jitagent.harness.spec import format_validation_error
    from jitagent.sandbox.launch import reclaim_leftovers
    from jitagent.solving.access import Access, AccessError
    from jitagent.solving.assembly import build_pipeline
    from jitagent.solving.config import PipelineConfig

    configure(args.log_format)
    try:
        access = Access.configured(None, args.tokens_file)
    except AccessError as exc:
        say(f"jitagent worker: {exc}")
        return USAGE
    chosen = settings.fields_of(args, settings.WORK, settings.WORKER) | {"name": args.name,
                                                                         "grace_s": args.grace}
    try:
        config = WorkerConfig(**{k: v for k, v in chosen.items() if v is not None})
    except ValidationError as exc:
        say(f"jitagent worker: {format_validation_error(exc)}")
        return 2
    key = api_key(args)  # before anything starts: a key in argv is a usage error
    reclaim_leftovers()  # sandboxes a killed predecessor left behind
    try:  # a worker builds its pipeline exactly as a server replica does
        pipeline = build_pipeline(bank_location(args), cache_dir=args.data_dir, meta_model=args.meta_model,
                                  solver_model=args.solver_model, api_key=key,
                                  config=PipelineConfig(synthesis=synthesis_config(args)), preload=True)
    except Exception as exc:  # the bank or a model cannot load: one line and status, like `serve`
        say(f"jitagent worker: {one_line(exc)}")
        return getattr(exc, "status", 1)

    async def work(queue):
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        await Worker(pipeline, queue, config, access).run(stop)
    try:
        return _with_queue(args, work, "jitagent worker")
    finally:
        pipeline.bank.close()


def _with_queue(args, use, command: str = "jitagent queue") -> int:
    """Run `use(queue)`; a Redis that cannot be used is one line and the status of its kind of failure."""
    import redis.asyncio as redis

    from jitagent.fleet.queue import TaskQueue

    async def main():
        queue = TaskQueue.connect(args.redis, args.stream, args.group)
        try:
            return await use(queue)
        finally:
            await queue.close()
    try:
        asyncio.run(main())
    except (redis.RedisError, OSError) as exc:
        problem = redis_problem(exc, args.redis)
        say(f"{command}: {problem}")
        return problem.status
    except KeyboardInterrupt:  # the way to end --follow
        pass
    return 0


def redis_problem(exc: Exception, url: str):
    """A Redis failure as a ServiceError: it wants a password the URL lacks (or a wrong one), or it
    cannot be reached; Redis's own words only after ours."""
    import redis.exceptions as errors

    from harness_bank.store import describe
    from jitagent.common.errors import REFUSED_LOGIN, UNREACHABLE, ServiceError, one_line
    from jitagent.fleet.queue import error_code

    url = describe(url)  # never its password (it comes from the environment: the message may go anywhere)

    if isinstance(exc, errors.AuthenticationError) or error_code(exc) in ("NOAUTH", "WRONGPASS"):
        return ServiceError(f"Redis at {url} refused the login ({one_line(exc)}): give the password in "
                            f"{REDIS_ENV}, as redis://:PASSWORD@HOST:PORT/DB", REFUSED_LOGIN)
    if isinstance(exc, (errors.ConnectionError, errors.TimeoutError, OSError)):
        return ServiceError(f"cannot reach Redis at {url} ({one_line(exc)}); is it running? (`jitagent fleet "
                            f"dev` starts a throwaway one)", UNREACHABLE)
    return ServiceError(f"Redis at {url}: {one_line(exc)}", UNREACHABLE)


def cmd_put(args) -> int:
    from jitagent.tasks.task import load_suite, parse_tasks

    # every task is checked before any is put: a bad line puts nothing
    tasks = parse_tasks(sys.stdin.read().splitlines(), "<stdin>") if args.source == "-" \
        else load_suite(args.source, args.split)
    tasks = tasks[:args.limit] if args.limit else tasks
    token = secret_from(args.token, args.token_file, "--token", QUEUE_TOKEN_ENV)

    async def put(queue):
        once = [t.id for t in tasks] if args.once else None
        for entry, task in zip(await queue.put([t.model_dump_json() for t in tasks], once, token), tasks):
            print(json.dumps({"entry": entry, "task_id": task.id}))
    return _with_queue(args, put)


def cmd_results(args) -> int:
    which = "dead" if args.dead else "results"

    async def show(queue):
        after, shown = args.after, 0
        while args.count is None or shown < args.count:
            wanted = None if args.count is None else args.count - shown
            entries = await queue.read(which, after, wanted, block_s=5.0 if args.follow else None)
            for entry_id, fields in entries:
                if "result" in fields:
                    fields = fields | {"result": json.loads(fields["result"])}
                print(json.dumps({"id": entry_id, **fields}), flush=True)
            shown += len(entries)
            after = entries[-1][0] if entries else after
            if not args.follow:
                break
    return _with_queue(args, show)


def cmd_stats(args) -> int:
    async def stats(queue):
        print(json.dumps(await queue.stats(), indent=2))
    return _with_queue(args, stats)


def add_commands(sub) -> None:
    p = sub.add_parser("worker", help="take tasks from a Redis Stream, run them, record outcomes in the bank",
                       parents=[common(), models(), bank(), queue_options()])
    p.add_argument("--name", help="consumer name, unique per live worker (default: HOST-PID)")
    settings.add_arguments(p, settings.WORK, config=True)
    p.set_defaults(func=cmd_worker)

    shared = [common(), queue_options()]
    queue = sub.add_parser("queue", help="the task queue on Redis Streams", parents=shared)
    cmds = queue.add_subparsers(dest="queue_command", required=True, metavar="COMMAND")
    q = cmds.add_parser("put", help="add tasks: a suite, a JSONL file or - for stdin (all checked first)",
                        parents=shared)
    q.add_argument("source", help="a suite name, a tasks JSONL file, or - to read JSONL from stdin")
    q.add_argument("--split", choices=["learn", "score", "final"],
                   help="only the suite's tasks of this split")
    q.add_argument("--limit", type=COUNT, help="only the first N tasks")
    q.add_argument("--once", action="store_true", help="a task whose id was put in the last day is not put "
                                                       "again (its first entry is printed): safe to retry")
    q.add_argument("--token-file", type=Path, metavar="FILE",
                   help=f"a file holding the bearer token the tasks are sent with (or {QUEUE_TOKEN_ENV}): "
                        f"a worker with --tokens-file runs them as its tenant's")
    q.add_argument("--token", help=argparse.SUPPRESS)  # taken only to be refused: argv shows it to all
    q.set_defaults(func=cmd_put)
    q = cmds.add_parser("results", help="results as JSON lines (--dead: the dead letters)", parents=shared)
    q.add_argument("--dead", action="store_true", help="the dead letters instead of the results")
    q.add_argument("--after", default="-", help="only entries after this id (resume where you left off)")
    q.add_argument("--count", type=COUNT, help="at most N entries")
    q.add_argument("--follow", action="store_true", help="wait for new ones (Ctrl-C ends)")
    q.set_defaults(func=cmd_results)
    q = cmds.add_parser("stats", help="stream lengths, pending entries, consumers", parents=shared)
    q.set_defaults(func=cmd_stats)

    fleet = sub.add_parser("fleet", help="a fleet on one machine, to try it", parents=[common()])
    cmds = fleet.add_subparsers(dest="fleet_command", required=True, metavar="COMMAND")
    q = cmds.add_parser("dev", help="start a throwaway PostgreSQL and Redis on loopback; print their URLs",
                        parents=[common()])
    q.set_defaults(func=cmd_dev)



def cmd_dev(args) -> int:
    """Throwaway PostgreSQL and Redis on loopback ports, to try a fleet on one machine: the URLs to export
    on stdout, then they run until Ctrl-C (or SIGTERM), which removes them with their data."""
    from contextlib import ExitStack

    from jitagent.cli.progress import waiting
    from jitagent.common.errors import UNREACHABLE, ServiceError
    from jitagent.fleet.services import (
        create_database,
        local_postgres,
        local_redis,
        postgres_missing,
        redis_missing,
    )

    if problem := postgres_missing() or redis_missing():
        raise ServiceError(f"cannot start the throwaway services: {problem}", UNREACHABLE)

    async def until_stopped():
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        await stop.wait()
    with ExitStack() as services:
        try:
            with waiting("starting a throwaway PostgreSQL and Redis"):
                bank_url = create_database(services.enter_context(local_postgres()), "jitagent")
                redis_url = services.enter_context(local_redis())
        except RuntimeError as exc:  # initdb, pg_ctl or redis-server failed: their words, in one line
            raise ServiceError(f"cannot start the throwaway services: {exc}", UNREACHABLE) from None
        print(f"export JITAGENT_BANK={bank_url}\nexport {REDIS_ENV}={redis_url}", flush=True)
        print('# throwaway: Ctrl-C stops both and removes their data. In other shells, after the exports:\n'
              '#   jitagent serve --bank "$JITAGENT_BANK" --data-dir /tmp/replica-1\n'
              '#   jitagent worker --bank "$JITAGENT_BANK" --data-dir /tmp/worker-1', file=sys.stderr,
              flush=True)
        asyncio.run(until_stopped())
    return 0
