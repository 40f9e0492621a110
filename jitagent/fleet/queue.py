"""A task queue on Redis Streams: tasks in, results and dead letters out, one consumer group.

Keys, from the tasks stream's name S: `S` (tasks), `S:results`, `S:dead` (entries delivered more
than K times, with their last error), `S:errors` (a hash: an entry's last error while it is
retried) and `S:request:ID` (the entry that a put with request id ID added, kept for a day: a put
retried after a lost reply adds nothing twice; with a token, `S:request-of:H:ID`, H its hash's head,
so that no one holding another token, or none, can claim an id first). An entry may carry its sender's
`token`: a worker with tenants runs it as that token's tenant (doors/worker.py), and once settled the
entry is deleted, so that Redis keeps no token past its task. Settling an entry — adding its result or
dead letter and acknowledging it — is one Lua script that only the consumer holding the entry gets to
run: a worker that lost its entry to a reclaim writes nothing, so a task has one result however
often it was delivered. The results and dead-letter streams keep about their newest `KEPT` entries
each (MAXLEN ~), and a dead letter keeps at most `KEPT_TASK_CHARS` of its task: nothing a client sends
grows Redis without bound.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import redis.asyncio as redis

TOKEN = "token"  # an entry's field: its sender's bearer token
KEPT = 100_000  # entries of the results and of the dead-letter stream, about (Redis trims whole nodes)
KEPT_TASK_CHARS = 2_000  # of a dead letter's task: enough to tell which it was
# KEYS: tasks, target stream, errors; ARGV: group, consumer, entry id, kept, whether to delete the entry
# ('1': it holds a token), then field, value, ...
SETTLE = """
local held = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[3], ARGV[3], 1)
if #held == 0 or held[1][2] ~= ARGV[2] then return 0 end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[4], '*', unpack(ARGV, 6))
redis.call('XACK', KEYS[1], ARGV[1], ARGV[3])
if ARGV[5] == '1' then redis.call('XDEL', KEYS[1], ARGV[3]) end
redis.call('HDEL', KEYS[3], ARGV[3])
return 1
"""
# KEYS: tasks; ARGV: seconds a request id is kept, the request ids' namespace, the token field's name and
# value (empty: none), then request id, task, request id, task, ...
PUT_ONCE = """
local ids = {}
for i = 5, #ARGV, 2 do
  local key = KEYS[1] .. ARGV[2] .. ARGV[i]
  local known = redis.call('GET', key)
  if not known then
    if ARGV[4] == '' then
      known = redis.call('XADD', KEYS[1], '*', 'task', ARGV[i + 1], 'request', ARGV[i])
    else
      known = redis.call('XADD', KEYS[1], '*', 'task', ARGV[i + 1], 'request', ARGV[i], ARGV[3], ARGV[4])
    end
    redis.call('SET', key, known, 'EX', ARGV[1])
  end
  ids[#ids + 1] = known
end
return ids
"""
REQUEST_TTL_S = 86_400
# KEYS: tasks; ARGV: group, consumer, entry ids: reset the idle time of those the consumer still holds
TOUCH = """
local kept = 0
for i = 3, #ARGV do
  local held = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[i], ARGV[i], 1)
  if #held > 0 and held[1][2] == ARGV[2] then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, ARGV[i], 'JUSTID')
    kept = kept + 1
  end
end
return kept
"""


def error_code(exc: Exception) -> str | None:
    """The kind of a Redis error reply (NOGROUP, BUSYGROUP, NOAUTH, WRONGPASS, …): the protocol's error
    prefix, its first word; redis-py has no exception class for most. None: not an error reply."""
    import redis.exceptions as errors

    return str(exc).split(" ", 1)[0] if isinstance(exc, errors.ResponseError) else None


@dataclass(frozen=True)
class Entry:
    id: str
    fields: dict[str, str]
    deliveries: int  # this delivery included


# A command's reply may take this long: longer than any blocking read it sends (redis-py 8 defaults to 5 s,
# which cut a 5 s blocking read off as "Timeout reading")
SOCKET_TIMEOUT_S = 30.0
MAX_BLOCK_S = SOCKET_TIMEOUT_S / 2


def block_ms(block_s: float) -> int:
    return max(1, int(min(block_s, MAX_BLOCK_S) * 1000))


class TaskQueue:
    def __init__(self, client: redis.Redis, stream: str = "jitagent:tasks", group: str = "jitagent"):
        self.redis = client
        self.stream = stream
        self.group = group
        self.results, self.dead, self.errors = f"{stream}:results", f"{stream}:dead", f"{stream}:errors"
        self._settle = client.register_script(SETTLE)
        self._touch = client.register_script(TOUCH)
        self._put_once = client.register_script(PUT_ONCE)

    @classmethod
    def connect(cls, url: str, stream: str = "jitagent:tasks", group: str = "jitagent") -> TaskQueue:
        return cls(redis.Redis.from_url(url, decode_responses=True, socket_timeout=SOCKET_TIMEOUT_S), stream,
                   group)

    async def close(self) -> None:
        await self.redis.aclose()

    def delivery(self, entry: Entry) -> str:
        """The key the bank records the entry's outcome under: one outcome per entry."""
        return f"{self.stream}:{entry.id}"

    async def ensure_group(self) -> None:
        """The consumer group, reading from the stream's start (tasks put before it existed count)."""
        try:
            await self.redis.xgroup_create(self.stream, self.group, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if error_code(exc) != "BUSYGROUP":
                raise

    async def put(self, tasks_json: list[str], request_ids: list[str] | None = None,
                  token: str | None = None) -> list[str]:
        """Add tasks (each a Task as JSON) in one round trip, each carrying `token` where given; their entry
        ids. With `request_ids` (one per task), a task whose request id was put in the last day (with the
        same token) is not added again: its entry id then is that of the first put, so a put retried after
        a lost reply is safe."""
        if request_ids is not None:
            pairs = [part for pair in zip(request_ids, tasks_json, strict=True) for part in pair]
            # a token's ids apart from those of no token: no put can name another's key
            namespace = f":request-of:{hashlib.sha256(token.encode()).hexdigest()[:16]}:" if token \
                else ":request:"
            return await self._put_once(keys=[self.stream], args=[REQUEST_TTL_S, namespace, TOKEN,
                                                                  token or "", *pairs])
        async with self.redis.pipeline(transaction=True) as pipe:
            for task in tasks_json:
                pipe.xadd(self.stream, {"task": task} | ({TOKEN: token} if token else {}))
            return await pipe.execute()

    async def take(self, consumer: str, claim_idle_s: float, block_s: float) -> Entry | None:
        """The next entry for `consumer`: first one that another consumer has left idle for
        `claim_idle_s` (a crashed worker's), else a new one, waiting up to `block_s` for it."""
        _, claimed, _ = await self.redis.xautoclaim(self.stream, self.group, consumer,
                                                    int(claim_idle_s * 1000), "0-0", count=1)
        if claimed:
            entry_id, fields = claimed[0]
            held = await self.redis.xpending_range(self.stream, self.group, entry_id, entry_id, 1)
            return Entry(entry_id, fields, held[0]["times_delivered"] if held else 1)
        reply = await self.redis.xreadgroup(self.group, consumer, {self.stream: ">"}, count=1,
                                            block=block_ms(block_s))
        if not reply or not reply[0][1]:
            return None
        entry_id, fields = reply[0][1][0]
        return Entry(entry_id, fields, 1)

    async def touch(self, consumer: str, entry_ids: list[str]) -> int:
        """Keep entries in flight from looking abandoned; how many `consumer` still holds."""
        if not entry_ids:
            return 0
        return await self._touch(keys=[self.stream], args=[self.group, consumer, *entry_ids])

    async def finish(self, consumer: str, entry: Entry, fields: dict[str, str]) -> bool:
        """Add the result and acknowledge the entry, atomically; False when `consumer` no longer holds it."""
        return await self._settle_into(self.results, consumer, entry, fields)

    async def bury(self, consumer: str, entry: Entry, error: str) -> bool:
        """Move the entry to the dead-letter stream with its last error, atomically."""
        task = entry.fields.get("task", "")
        if len(task) > KEPT_TASK_CHARS:
            task = f"{task[:KEPT_TASK_CHARS]}... ({len(task):,} characters)"
        fields = {"entry": entry.id, "task": task, "error": error, "deliveries": str(entry.deliveries)}
        return await self._settle_into(self.dead, consumer, entry, fields)

    async def _settle_into(self, target: str, consumer: str, entry: Entry, fields: dict[str, str]) -> bool:
        flat = [part for pair in fields.items() for part in pair]
        return bool(await self._settle(keys=[self.stream, target, self.errors],
                                       args=[self.group, consumer, entry.id, KEPT,
                                             "1" if TOKEN in entry.fields else "0", *flat]))

    async def note_error(self, entry: Entry, error: str) -> None:
        await self.redis.hset(self.errors, entry.id, error)

    async def last_error(self, entry: Entry) -> str | None:
        return await self.redis.hget(self.errors, entry.id)

    async def read(self, which: str, after: str = "-", count: int | None = None,
                   block_s: float | None = None) -> list[tuple[str, dict[str, str]]]:
        """Entries of the results or dead-letter stream after entry id `after` ('-': from the start);
        with `block_s`, waits that long for the first one."""
        stream = {"results": self.results, "dead": self.dead}[which]
        if block_s is not None:
            reply = await self.redis.xread({stream: "0-0" if after == "-" else after}, count=count,
                                           block=block_ms(block_s))
            return reply[0][1] if reply else []
        return await self.redis.xrange(stream, "-" if after == "-" else f"({after}", "+", count=count)

    async def stats(self) -> dict:
        pipe = self.redis.pipeline(transaction=False)
        for stream in (self.stream, self.results, self.dead):
            pipe.xlen(stream)
        tasks, results, dead = await pipe.execute()
        stats = {"stream": self.stream, "group": self.group, "tasks": tasks, "results": results, "dead": dead,
                 "pending": 0, "lag": None, "consumers": []}
        if not tasks:
            return stats
        group = next((g for g in await self.redis.xinfo_groups(self.stream) if g["name"] == self.group), None)
        if group is not None:
            consumers = await self.redis.xinfo_consumers(self.stream, self.group)
            stats |= {"pending": group["pending"], "lag": group.get("lag"),
                      "consumers": [{"name": c["name"], "pending": c["pending"], "idle_ms": c["idle"]}
                                    for c in consumers]}
        return stats
