"""One run per run id, however often a client asks for it: a retried call is answered by the first run.

A client that names its solve (`request_id`, which becomes the run id) may retry it safely. A call whose
run is in progress on this replica follows that run from its first event instead of starting another;
one whose run is over gets its result, from this replica's memory of its last results or else from
the bank's record of the run (any replica's, across restarts: `recorded`). Two replicas that started
the same id at once record it once; the one that lost answers with the other's record. A run belongs
to the calls following it: it is cancelled when the last of them goes (its deadline passed, it was
cancelled, its connection broke), as a run without an id is, and a retry after that runs it anew.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable

import grpc

from jitagent.v1 import jitagent_pb2 as pb

Events = AsyncIterator[pb.SolveEvent]


class TaskFailed(Exception):
    """A task that could not finish, with the status code that says why."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code


class Run:
    """A run in progress and the events it has streamed so far, for every call that follows it."""

    def __init__(self, events: Events):
        self.events: list[pb.SolveEvent] = []
        self.failure: Exception | None = None
        self.followers = 0
        self._news = asyncio.Event()
        self.task = asyncio.create_task(self._drain(events))

    async def _drain(self, events: Events) -> None:
        try:
            async for event in events:
                self.events.append(event)
                self._notify()
        except Exception as exc:  # each follower raises it
            self.failure = exc
        finally:
            self._notify()

    def _notify(self) -> None:
        self._news.set()
        self._news = asyncio.Event()

    @property
    def joinable(self) -> bool:
        return not self.task.done() and not self.task.cancelling()

    async def follow(self) -> Events:
        self.followers += 1
        try:
            seen = 0
            while seen < len(self.events) or not self.task.done():
                if seen < len(self.events):
                    yield self.events[seen]
                    seen += 1
                else:
                    await self._news.wait()
            if self.failure is not None:
                raise self.failure
        finally:
            self.followers -= 1
            if not self.followers:  # no one is waiting for it any more
                self.task.cancel()


class Solves:
    """The runs of this replica by run id; `remember`: finished results kept for retries."""

    def __init__(self, recorded: Callable[[str], Awaitable[pb.SolveEvent | None]], remember: int = 256):
        self.recorded = recorded
        self.remember = remember
        self.running: dict[str, Run] = {}
        self.finished: OrderedDict[str, pb.SolveEvent] = OrderedDict()

    async def follow(self, run_id: str, named: bool, start: Callable[[], Events]) -> Events:
        """The events of the run `run_id`: the one in progress, the result of the one that is over, or
        those of a new run `start()` begins. Only a `named` (client-chosen) id can have run before."""
        run = self._joinable(run_id)
        if run is None:
            if named and (result := self.finished.get(run_id) or await self.recorded(run_id)) is not None:
                yield result
                return
            run = self._joinable(run_id)  # a call with the same id may have started it meanwhile
        if run is None:
            run = self.running[run_id] = Run(start())
            run.task.add_done_callback(lambda _: self._finished(run_id, run, named))
        try:
            async for event in run.follow():
                yield event
        except TaskFailed as exc:
            # another replica ran the same id at the same time and recorded it first: its result is ours
            if named and exc.code == grpc.StatusCode.INTERNAL and (result := await self.recorded(run_id)):
                yield result
                return
            raise

    def _joinable(self, run_id: str) -> Run | None:
        run = self.running.get(run_id)
        return run if run is not None and run.joinable else None

    def _finished(self, run_id: str, run: Run, named: bool) -> None:
        if self.running.get(run_id) is run:
            del self.running[run_id]
        if named and run.events and run.events[-1].HasField("result"):
            self.finished[run_id] = run.events[-1]
            while len(self.finished) > self.remember:
                self.finished.popitem(last=False)
