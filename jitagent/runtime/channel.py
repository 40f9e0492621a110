"""Events from plain coroutines to an async generator, one at a time; a stream's final outcome."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Coroutine
from typing import TypeVar

from jitagent.runtime.events import Step

T = TypeVar("T")


async def last_of(stream: AsyncIterator, kind: type[T]) -> T | None:
    """The last item of type `kind` in `stream`, read to its end: its clean-up is done on return."""
    last = None
    async for item in stream:
        if isinstance(item, kind):
            last = item
    return last


class EventChannel:
    """Stages are plain coroutines that `await emit(event)`; `relay(work)` yields each event as it is
    emitted. The emitter waits until the consumer asks for the next event, so the work advances exactly
    as a generator would: it never runs ahead of a slow consumer, and one that stops stops the work."""

    def __init__(self) -> None:
        self._handoff: asyncio.Queue[tuple[Step, asyncio.Future[None]]] = asyncio.Queue(maxsize=1)

    async def emit(self, event: Step) -> None:
        taken = asyncio.get_running_loop().create_future()
        await self._handoff.put((event, taken))
        await taken

    async def relay(self, work: Coroutine[None, None, None]) -> AsyncIterator[Step]:
        worker = asyncio.ensure_future(work)
        handoff: asyncio.Future | None = None
        try:
            while True:
                handoff = asyncio.ensure_future(self._handoff.get())
                await asyncio.wait((handoff, worker), return_when=asyncio.FIRST_COMPLETED)
                if not handoff.done():  # the work ended; it raises here what it did not handle
                    worker.result()
                    return
                event, taken = handoff.result()
                yield event
                taken.set_result(None)
        finally:
            for pending in (handoff, worker):
                if pending is not None and not pending.done():
                    pending.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await pending
