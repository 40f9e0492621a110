"""The task queue against a real redis-server on loopback."""

import asyncio
import time

from jitagent.fleet.queue import TaskQueue


def test_a_blocking_read_longer_than_redis_pys_default_socket_timeout_waits_it_out(redis_server):
    """`queue results --follow` reads with a 5 s block: redis-py 8's default socket timeout (5 s) cut it off
    as "Timeout reading"; an empty stream must give nothing after the wait, not an error."""
    async def main():
        queue = TaskQueue.connect(redis_server, "jitagent:test-follow")
        try:
            start = time.monotonic()
            assert await queue.read("results", block_s=6.0) == []
            return time.monotonic() - start
        finally:
            await queue.close()
    assert asyncio.run(main()) >= 5.9
