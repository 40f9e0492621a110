"""A prompt over the size cap is refused with INVALID_ARGUMENT, naming the field, before any work: it is
neither held until the caller's deadline nor recorded (a real server, a real bank, the scripted model)."""

import asyncio
import time

import grpc

from jitagent.protocol.sdk import violations_of
from jitagent.tasks.task import MAX_PROMPT_CHARS

from .conftest import running


def test_a_prompt_over_the_cap_is_invalid_argument_at_once(make_config):
    async def main():
        async with running(make_config()) as (server, client):
            start = time.monotonic()
            try:
                async for _ in client.solve("x" * (1 << 20), timeout=600):
                    raise AssertionError("a refused task streams nothing")
            except grpc.aio.AioRpcError as exc:
                refused = exc
            assert refused.code() == grpc.StatusCode.INVALID_ARGUMENT and time.monotonic() - start < 30
            assert violations_of(refused) == [
                ("task.prompt", f"1,048,576 characters; a task's text is at most {MAX_PROMPT_CHARS:,}")]
            streamed = [r async for r in client.stream(["What is 0 + 0?", "y" * (MAX_PROMPT_CHARS + 1)])]
            assert streamed[0].HasField("result")
            assert streamed[1].error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]  # the stream goes on
            assert server.solving.pipeline.bank.store.query("SELECT COUNT(*) FROM runs")[0][0] == 1
    asyncio.run(main())
