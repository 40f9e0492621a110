"""Events from plain coroutines to an async generator, one at a time."""

import asyncio

import pytest

from jitagent.runtime.channel import EventChannel
from jitagent.runtime.events import Step


def test_the_work_waits_until_the_consumer_asks_for_the_next_event():
    async def go():
        channel, emitted, seen = EventChannel(), [], []

        async def work():
            for step in range(3):
                emitted.append(step)
                await channel.emit(Step(kind="model", step=step))
        async for event in channel.relay(work()):
            await asyncio.sleep(0.01)  # a slow consumer: the work must not run ahead
            seen.append((event.step, list(emitted)))
        return seen
    assert asyncio.run(go()) == [(0, [0]), (1, [0, 1]), (2, [0, 1, 2])]


def test_a_consumer_that_stops_cancels_the_work():
    async def go():
        channel, ended = EventChannel(), []

        async def work():
            try:
                while True:
                    await channel.emit(Step(kind="model"))
            finally:
                ended.append(True)
        events = channel.relay(work())
        await events.__anext__()
        await events.aclose()
        return ended
    assert asyncio.run(go()) == [True]


def test_what_the_work_does_not_handle_reaches_the_consumer():
    async def go():
        channel, seen = EventChannel(), []

        async def work():
            await channel.emit(Step(kind="model", text="before"))
            raise ValueError("broken stage")
        with pytest.raises(ValueError, match="broken stage"):
            async for event in channel.relay(work()):
                seen.append(event.text)
        return seen
    assert asyncio.run(go()) == ["before"]
