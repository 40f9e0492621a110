"""`jitagent worker` and `jitagent queue put|results|stats`, and the fleet's shared flags."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys

REDIS_ENV = "JITAGENT_REDIS_URL"
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"


def queue_options() -> argparse.ArgumentParser:
    """`--redis`, `--stream`, `--group`: a parent parser, so they are accepted after the subcommand too
    (`queue stats --redis URL`); their defaults are filled after parsing (`queue_defaults`)."""
    from jitagent.cli_common import parent_parser, without_password

    p = parent_parser()
    p.add_argument("--redis", type=without_password(f"set {REDIS_ENV}"),
                   help=f"Redis URL (default: ${REDIS_ENV} or {DEFAULT_REDIS})")
    p.add_argument("--stream", help="the tasks stream (default: jitagent:tasks); results in STREAM:results, "
                                    "dead letters in STREAM:dead")
    p.add_argument("--group", help="the workers' consumer group (default: jitagent)")
    return p


def queue_defaults() -> dict:
    return {"redis": os.environ.get(REDIS_ENV, DEFAULT_REDIS), "stream": "jitagent:tasks",
            "group": "jitagent"}


def cmd_worker(args) -> int:
    from pydantic import ValidationError

    from jitagent.assembly import build_pipeline
    from jitagent.cli_common import api_key, bank_location
    from jitagent.errors import one_line
    from jitagent.fleet.worker import Worker, WorkerConfig
    from jitagent.pipeline import PipelineConfig
    from jitagent.sandbox import reclaim_leftovers
    from jitagent.spec import format_validation_error
    from jitagent.synthesis.synthesize import SynthesisConfig

    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    chosen = {"name": args.name, "slots": args.slots, "claim_idle_s": args.claim_idle,
              "max_deliveries": args.max_deliveries, "task_timeout_s": args.task_timeout,
              "grace_s": args.grace}
    try:
        config = WorkerConfig(**{k: v for k, v in chosen.items() if v is not None})
    except ValidationError as exc:
        print(f"jitagent worker: {format_validation_error(exc)}", file=sys.stderr)
        return 2
    key = api_key(args)  # before anything starts: a key in argv is a usage error
    reclaim_leftovers()  # sandboxes a killed predecessor left behind
    try:  # a worker builds its pipeline exactly as a server replica does
        synthesis = SynthesisConfig(n=args.n, dry_run=not args.no_dry_run)
        pipeline = build_pipeline(bank_location(args), cache_dir=args.data_dir, meta_model=args.meta_model,
                                  solver_model=args.solver_model, api_key=key,
                                  config=PipelineConfig(synthesis=synthesis), preload=True)
    except Exception as exc:  # the bank or a model cannot load: one line, like `serve`
        print(f"jitagent worker: {one_line(exc)}", file=sys.stderr)
        return 1

    async def work(queue):
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        await Worker(pipeline, queue, config).run(stop)
    try:
        return _with_queue(args, work, "jitagent worker")
    finally:
        pipeline.bank.close()


def _with_queue(args, use, command: str = "jitagent queue") -> int:
    """Run `use(queue)`; a Redis that cannot be reached is one line and status 1."""
    import redis.asyncio as redis

    from jitagent.errors import one_line
    from jitagent.fleet.streams import TaskQueue

    async def main():
        queue = TaskQueue.connect(args.redis, args.stream, args.group)
        try:
            return await use(queue)
        finally:
            await queue.close()
    try:
        asyncio.run(main())
    except (redis.RedisError, OSError) as exc:
        print(f"{command}: redis {args.redis}: {one_line(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # the way to end --follow
        pass
    return 0


def cmd_put(args) -> int:
    from jitagent.tasks import load_suite, parse_tasks

    # every task is checked before any is put: a bad line puts nothing
    tasks = parse_tasks(sys.stdin.read().splitlines(), "<stdin>") if args.source == "-" \
        else load_suite(args.source, args.split)
    tasks = tasks[:args.limit] if args.limit else tasks

    async def put(queue):
        once = [t.id for t in tasks] if args.once else None
        for entry, task in zip(await queue.put([t.model_dump_json() for t in tasks], once), tasks):
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
    from jitagent.cli_common import bank, common, models

    p = sub.add_parser("worker", help="take tasks from a Redis Stream, run them, record outcomes in the bank",
                       parents=[common(), models(), bank(), queue_options()])
    p.add_argument("--name", help="consumer name, unique per live worker (default: HOST-PID)")
    p.add_argument("--slots", type=int, help="tasks run at once; one is taken only into a free slot (1)")
    p.add_argument("--claim-idle", type=float, help="seconds an entry's holder may be silent before another "
                                                    "worker reclaims it (60)")
    p.add_argument("--max-deliveries", type=int, help="deliveries before an entry is a dead letter (3)")
    p.add_argument("--task-timeout", type=float, help="wall-clock seconds per task (600)")
    p.add_argument("--grace", type=float, help="seconds running tasks get on SIGTERM (10)")
    p.add_argument("--n", type=int, default=3, help="candidates per synthesis")
    p.add_argument("--no-dry-run", action="store_true")
    p.set_defaults(func=cmd_worker, defaults=queue_defaults())

    shared = [common(), queue_options()]
    queue = sub.add_parser("queue", help="the task queue on Redis Streams", parents=shared)
    cmds = queue.add_subparsers(dest="queue_command", required=True)
    q = cmds.add_parser("put", help="add tasks: a suite, a JSONL file or - for stdin (all checked first)",
                        parents=shared)
    q.add_argument("source")
    q.add_argument("--split")
    q.add_argument("--limit", type=int)
    q.add_argument("--once", action="store_true", help="a task whose id was put in the last day is not put "
                                                       "again (its first entry is printed): safe to retry")
    q.set_defaults(func=cmd_put, defaults=queue_defaults())
    q = cmds.add_parser("results", help="results as JSON lines (--dead: the dead letters)", parents=shared)
    q.add_argument("--dead", action="store_true")
    q.add_argument("--after", default="-", help="only entries after this id (resume where you left off)")
    q.add_argument("--count", type=int)
    q.add_argument("--follow", action="store_true", help="wait for new ones (Ctrl-C ends)")
    q.set_defaults(func=cmd_results, defaults=queue_defaults())
    q = cmds.add_parser("stats", help="stream lengths, pending entries, consumers", parents=shared)
    q.set_defaults(func=cmd_stats, defaults=queue_defaults())
