"""`jitagent worker`: take tasks from a Redis Stream, run the pipeline, record the outcome in the bank,
write the result, acknowledge.

Delivery is at least once; the bank makes it effectively once: the outcome carries the stream entry's
id and the bank records one outcome per id. A task is taken only into a free slot (back-pressure).
Entries in flight are touched every `claim_idle_s / 3`, so only a dead worker's go idle; the other
workers reclaim those (XAUTOCLAIM). A run that failed for infrastructure reasons (a model server
down) is not acknowledged either: it is retried once its entry is idle. An entry delivered more than
`max_deliveries` times goes to the dead-letter stream with its last error; one that is not a task, or
that the solving layer refuses as wrong (a bad request: no retry mends it), goes there at once. On stop:
take nothing new, give running tasks `grace_s`, then cancel them (their entries stay pending and are
reclaimed).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
from typing import TYPE_CHECKING

import redis.asyncio as redis
from pydantic import BaseModel, Field

from jitagent.common.errors import one_line
from jitagent.fleet.queue import TOKEN, Entry, TaskQueue, error_code
from jitagent.solving.access import OPERATOR, Access, Caller
from jitagent.solving.confinement import ALLOW_UNCONFINED
from jitagent.solving.layer import PERMANENT, SolveError, Solving, deadline_in
from jitagent.tasks.task import Task, TaskFileError, parse_tasks

MAX_ENTRY_CHARS = 4 << 20  # a queued task, as the gRPC and HTTP doors' largest request

if TYPE_CHECKING:  # a door works through the solving layer; the pipeline it is handed is only a type here
    from jitagent.solving.pipeline import JitPipeline

log = logging.getLogger("jitagent.worker")


class WorkerConfig(BaseModel):
    name: str = Field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}",
                      description="consumer name in the group; unique per live worker")
    slots: int = Field(1, ge=1, le=64, description="tasks run at once")
    claim_idle_s: float = Field(60.0, gt=0, description="silence after which others reclaim an entry")
    max_deliveries: int = Field(3, ge=1, description="deliveries after which an entry is a dead letter")
    task_timeout_s: float = Field(600.0, gt=0, description="wall-clock budget of one task")
    grace_s: float = Field(10.0, ge=0, description="time running tasks get to finish on stop")
    block_s: float = Field(1.0, gt=0, description="one read's wait for a new task (how soon a stop is seen)")
    allow_unconfined: bool = Field(False, description=ALLOW_UNCONFINED)


class Worker:
    """Tasks from the queue through the solving layer. `access`: with a tokens file, an entry runs as the
    tenant of the token it carries (`queue put --token-file`), and one without a known token is a dead
    letter; else every entry is the operator's (whoever may write to Redis may run tasks)."""

    def __init__(self, pipeline: JitPipeline, queue: TaskQueue, config: WorkerConfig | None = None,
                 access: Access | None = None):
        self.queue = queue
        self.config = config or WorkerConfig()
        # a task is taken only into a free slot, so the solving layer's admission never makes one wait
        self.solving = Solving(pipeline, concurrency=self.config.slots, max_queue=0,
                               max_concurrent=self.config.slots, access=access,
                               allow_unconfined=self.config.allow_unconfined)
        self.in_flight: dict[str, asyncio.Task] = {}

    async def run(self, stop: asyncio.Event) -> None:
        config = self.config
        await self.queue.ensure_group()
        stopping = asyncio.create_task(stop.wait())
        heartbeat = asyncio.create_task(self._heartbeat())
        log.info(json.dumps({"event": "worker", "name": config.name, "stream": self.queue.stream,
                             "group": self.queue.group, "slots": config.slots}))
        try:
            while not stop.is_set():
                if len(self.in_flight) >= config.slots:  # back-pressure: no free slot, take nothing
                    await asyncio.wait({stopping, *self.in_flight.values()},
                                       return_when=asyncio.FIRST_COMPLETED)
                    continue
                try:
                    entry = await self.queue.take(config.name, config.claim_idle_s, config.block_s)
                except (redis.RedisError, OSError) as exc:  # the client reconnects on the next command
                    log.warning(json.dumps({"event": "queue_unavailable", "error": one_line(exc)}))
                    await asyncio.wait({stopping}, timeout=config.block_s)
                    if error_code(exc) == "NOGROUP":  # a Redis that came back without its data: begin anew
                        with contextlib.suppress(redis.RedisError, OSError):
                            await self.queue.ensure_group()
                    continue
                if entry is not None:
                    task = self.in_flight[entry.id] = asyncio.create_task(self._handle(entry))
                    task.add_done_callback(lambda _, key=entry.id: self.in_flight.pop(key, None))
            await self._drain()
        finally:
            heartbeat.cancel()
            stopping.cancel()

    async def _drain(self) -> None:
        running = list(self.in_flight.values())
        if not running:
            return
        _, late = await asyncio.wait(running, timeout=self.config.grace_s)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(self.config.claim_idle_s / 3)
            try:
                await self.queue.touch(self.config.name, list(self.in_flight))
            except (redis.RedisError, OSError) as exc:
                log.warning(json.dumps({"event": "heartbeat_failed", "error": one_line(exc)}))

    async def _handle(self, entry: Entry) -> None:
        try:
            if entry.deliveries > self.config.max_deliveries:
                error = await self.queue.last_error(entry) or "none recorded: the worker holding it stopped"
                await self._bury(entry, f"delivered {entry.deliveries} times; last error: {error}")
                return
            try:
                task, caller = self._task_of(entry), self._caller(entry)
            except TaskFileError as exc:  # never runnable: no point in retrying
                await self._bury(entry, str(exc))
                return
            while caller.max_open is not None and \
                    self.solving.open_by_tenant[caller.tenant] >= caller.max_open:
                await asyncio.sleep(0.1)  # the tenant's quota: wait in this slot, not spend a delivery
            with self.solving.admitted(caller):
                result = await self.solving.solve(task, delivery=self.queue.delivery(entry), door="queue",
                                                  deadline=deadline_in(self.config.task_timeout_s),
                                                  run_id=self.solving.name_run(None, caller)[0],
                                                  caller=caller)
            if result.run is not None and result.run.error is not None and not result.run.interrupted:
                raise RuntimeError(result.run.error)  # a model or host failed, not the task: retry it
            fields = {"entry": entry.id, "task_id": task.id, "worker": self.config.name,
                      "result": json.dumps(result.to_dict())}
            if self.solving.access.tenanted:
                fields["tenant"] = caller.tenant
            finished = await self.queue.finish(self.config.name, entry, fields)
            log.info(json.dumps({"event": "finished", "entry": entry.id, "task_id": task.id,
                                 "deliveries": entry.deliveries, "finished": finished}))
        except asyncio.CancelledError:
            raise
        except SolveError as exc:
            if exc.kind in PERMANENT:  # the request itself is wrong: no retry can mend it
                await self._bury(entry, str(exc))
            else:
                await self._note(entry, one_line(exc))
        except Exception as exc:
            await self._note(entry, one_line(exc))

    @staticmethod
    def _task_of(entry: Entry) -> Task:
        """The entry's task; TaskFileError for one that can never run."""
        text = entry.fields.get("task", "")
        if len(text) > MAX_ENTRY_CHARS:  # not even parsed: JSON of any size would be read whole
            raise TaskFileError(f"entry {entry.id}: {len(text):,} characters; a queued task is at most "
                                f"{MAX_ENTRY_CHARS:,}")
        tasks = parse_tasks([text], f"entry {entry.id}")
        if not tasks:
            raise TaskFileError(f"entry {entry.id}: no task")
        if tasks[0].client_tools:  # a run would pause at a call no one is there to answer
            raise TaskFileError(f"entry {entry.id}: a queued task cannot carry client_tools (its client "
                                "cannot answer a call); send it through the OpenAI door, gRPC or the SDK")
        return tasks[0]

    def _caller(self, entry: Entry) -> Caller:
        """Whose the entry is: with tenants, its token's tenant (TaskFileError for a token none knows:
        no retry can mend it); else the operator's (TaskFileError where it carries a token)."""
        access = self.solving.access
        if not access.tenanted:
            if TOKEN in entry.fields:  # its sender meant a tenant's memory, not everyone's
                raise TaskFileError(f"entry {entry.id}: it carries a token, and this worker has no "
                                    f"--tokens-file to say whose it is")
            return OPERATOR
        if (caller := access.caller(f"Bearer {entry.fields.get(TOKEN, '')}")) is None:
            raise TaskFileError(f"entry {entry.id}: no token this deployment knows (queue put --token-file)")
        return caller

    async def _note(self, entry: Entry, error: str) -> None:
        """A failure a retry may get past: the entry stays pending, retried after the idle timeout."""
        log.warning(json.dumps({"event": "task_failed", "entry": entry.id, "error": error}))
        # if this fails, a dead letter says none was recorded; the entry itself is safe in the stream
        with contextlib.suppress(redis.RedisError, OSError):
            await self.queue.note_error(entry, error)

    async def _bury(self, entry: Entry, error: str) -> None:
        await self.queue.bury(self.config.name, entry, error)
        log.warning(json.dumps({"event": "dead_letter", "entry": entry.id, "error": error}))
