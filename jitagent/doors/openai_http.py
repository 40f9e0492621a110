"""The OpenAI-compatible front door, where agents already live: `POST /v1/chat/completions`, `GET
/v1/models`, `GET /v1/models/{id}` and `POST /v1/jitagent/feedback`, over HTTP beside gRPC in the same
process and on the same pipeline (`serve --openai-port P`). Every error is OpenAI's error object.

The model is `jitagent`, or `jitagent/<type>` to name the task's type (its cluster); the task is the
conversation (one user message: its text; more: each message as `role: text`), the answer is the
assistant message. `usage` counts every token of the solve — synthesis, repair, dry runs, selection and
the run — and is absent where a count is unknown, never 0. The run id is the response's `id` and its
`x-jitagent-run-id` header; `POST /v1/jitagent/feedback {"run_id", "reward"}` reports how it went. With
`stream: true` the answer is sent once it is known, SSE keep-alive comments before. Requests carry the
same bearer token as gRPC. An optional `jitagent` object in the request (`extra_body` in the openai
client) may give `expect` or `verifier`, as `jitagent solve` takes them, `n`, and `request_id`: as gRPC's,
a retry under it gets the first run's result, never a second run. The work goes through the solving
layer (jitagent.solving.layer) every door shares: one admission, one run per id, one error type.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import resource
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Literal

import h11
import uvicorn
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from uvicorn.protocols.http.h11_impl import H11Protocol

from jitagent.harness.spec import format_validation_error
from jitagent.solving.access import Caller
from jitagent.solving.feedback import Report
from jitagent.solving.layer import MAX_N, REQUEST_ID, SolveError, Solving
from jitagent.solving.result import Solved
from jitagent.tasks.conversation import called, returned, transcript
from jitagent.tasks.task import (
    AUTO,
    MAX_CLIENT_TOOLS,
    SERVER_TOOL_NAMES,
    ClientTool,
    Expected,
    task_for,
    verifier_for,
)

log = logging.getLogger("jitagent.server.openai")
MODEL = "jitagent"
MAX_BODY_BYTES = 4 << 20  # as gRPC's largest message; a task's text has its own, smaller cap
# What each kind of SolveError is over HTTP (and its OpenAI error code where OpenAI has one).
STATUS = {"loading": 503, "busy": 429, "deadline": 504, "cancelled": 499, "model": 503, "bank": 503,
          "bad_request": 400, "not_found": 404, "conflict": 409, "precondition": 409, "permission": 403,
          "quota": 429, "internal": 500}
CODES = {"busy": "rate_limit_exceeded", "not_found": "not_found", "conflict": "already_reported",
         "quota": "insufficient_quota"}
# Connections are descriptors the gRPC door and the sandboxes need too: an idle or slow client holds one
# for at most REQUEST_TIMEOUT_S (its request, headers and body) or KEEPALIVE_S (between requests), and
# the door holds at most a quarter of the process's limit (`max_connections`), at most MAX_CONNECTIONS.
REQUEST_TIMEOUT_S = 15.0
KEEPALIVE_S = 5
MAX_CONNECTIONS = 1000


class ApiError(Exception):
    """An answer in OpenAI's error shape: {"error": {"message", "type", "param", "code"}}."""

    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.status, self.param, self.code = status, param, code

    def response(self, headers: dict | None = None) -> JSONResponse:
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        return JSONResponse({"error": {"message": str(self), "type": kind, "param": self.param,
                                       "code": self.code}}, status_code=self.status, headers=headers)

    @classmethod
    def of(cls, exc: SolveError) -> ApiError:
        param = exc.violations[0][0] if exc.violations else None
        return cls(STATUS[exc.kind], str(exc), param, CODES.get(exc.kind))

    @classmethod
    def invalid(cls, exc: ValidationError) -> ApiError:
        """A request body the models refuse; `param`: where its first problem is, e.g. `jitagent.n`."""
        loc = exc.errors()[0]["loc"]
        param = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
        return cls(400, format_validation_error(exc), param or None)


def refused(exc: ApiError | ValidationError | SolveError) -> Response:
    """Why a request is not served, as OpenAI's error object: the door's own refusal, a body its models
    refuse, or the solving layer's error kind."""
    if isinstance(exc, ValidationError):
        return ApiError.invalid(exc).response()
    return (ApiError.of(exc) if isinstance(exc, SolveError) else exc).response()


async def no_route(request: Request, exc: Exception) -> Response:
    """A path or method this door does not serve, answered as OpenAI answers one: its error object."""
    status = getattr(exc, "status_code", 404)
    what = "URL" if status == 404 else "method for URL"
    return ApiError(status, f"Invalid {what} ({request.method} {request.url.path})").response()


class Part(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str
    text: str | None = None


class CalledFunction(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    arguments: str


class ToolCallMade(BaseModel):
    """An assistant message's call, as the client got it from an earlier reply."""

    model_config = ConfigDict(extra="allow")
    id: str
    type: Literal["function"] = "function"
    function: CalledFunction


class Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[Part] | None = None
    tool_calls: list[ToolCallMade] | None = None  # assistant: the calls it made
    tool_call_id: str | None = None  # tool: the call this is the result of


class Function(BaseModel):
    model_config = ConfigDict(extra="allow")  # `strict` and the like: the schema is always held to
    name: str
    description: str = ""
    parameters: dict | None = None


class ToolDef(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["function"]
    function: Function


class NamedFunction(BaseModel):
    name: str


class NamedChoice(BaseModel):
    type: Literal["function"]
    function: NamedFunction


class JitOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    expect: Expected | None = None
    verifier: dict | None = None
    n: int | None = Field(None, ge=1, le=MAX_N)
    request_id: str | None = Field(None, pattern=f"^{REQUEST_ID.pattern}$")  # pydantic's search is unanchored


class StreamOptions(BaseModel):
    model_config = ConfigDict(extra="allow")
    include_usage: bool = False


class ChatRequest(BaseModel):
    """What this door reads of a chat completion request; sampling options and the like are the harness's
    to decide, and ignored."""

    model_config = ConfigDict(extra="ignore")
    model: str
    messages: list[Message] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    tools: list[ToolDef] | None = Field(None, max_length=MAX_CLIENT_TOOLS)
    tool_choice: Literal["auto", "none", "required"] | NamedChoice | None = None
    parallel_tool_calls: bool = True
    jitagent: JitOptions | None = None

    @property
    def choice(self) -> str:
        """The task's tool_choice (`none` sends no tools at all)."""
        if isinstance(self.tool_choice, NamedChoice):
            return self.tool_choice.function.name
        return self.tool_choice or AUTO


def client_tools(chat: ChatRequest) -> list[ClientTool]:
    """The request's functions as the task's client tools; ApiError naming the field of one that is wrong."""
    if chat.choice == "none":
        return []
    tools, taken = [], set(SERVER_TOOL_NAMES)
    for i, tool in enumerate(chat.tools or []):
        if tool.function.name in taken:
            param = f"tools[{i}].function.name"
            raise ApiError(400, f"{param}: {tool.function.name!r} is named twice or is a server tool's name",
                           param)
        taken.add(tool.function.name)
        given = tool.function.model_dump(exclude_none=True, include={"name", "description", "parameters"})
        try:
            tools.append(ClientTool(**given))
        except ValidationError as exc:
            error = exc.errors()[0]
            param = f"tools[{i}].function.{error['loc'][0]}"
            raise ApiError(400, f"{param}: {error['msg'].removeprefix('Value error, ')}", param) from None
    return tools


def conversation_text(messages: list[Message]) -> str:
    """The task a conversation asks for (`tasks.conversation.transcript`): a run that paused at a call goes
    on from the conversation, with the calls an assistant made and the results the client sent back."""
    turns, names = [], {}
    for i, message in enumerate(messages):
        parts = message.content if isinstance(message.content, list) else [Part(type="text",
                                                                                text=message.content or "")]
        for j, part in enumerate(parts):
            if part.type != "text":
                raise ApiError(400, f"messages[{i}].content[{j}]: only text parts are taken, got "
                               f"{part.type!r}", f"messages[{i}].content")
        text = "".join(p.text or "" for p in parts)
        for call in message.tool_calls or []:
            names[call.id] = call.function.name
            text += "\n" + called(call.function.name, call.function.arguments)
        if message.role == "tool":
            text = returned(names.get(message.tool_call_id or "", "a function"), text)
        turns.append((message.role, text.strip()))
    return transcript(turns)


def task_type(model: str) -> str | None:
    if model == MODEL:
        return None
    if model.startswith(MODEL + "/") and len(model) > len(MODEL) + 1:
        return model.removeprefix(MODEL + "/")
    raise ApiError(404, f"model {model!r}: this server serves {MODEL} and {MODEL}/<task type>", "model",
                   "model_not_found")


def model_object(name: str) -> dict:
    return {"id": name, "object": "model", "created": 0, "owned_by": "jitagent"}


def reply(solved: Solved) -> str:
    """What the agent reads: the answer, or, where the harness gave none, that it gave none and why (an
    empty reply reads as an answer of nothing)."""
    if solved.answer is not None:
        return solved.answer
    return "[jitagent: the harness gave no answer" + (f" ({solved.error})" if solved.error else "") + "]"


def assistant_message(solved: Solved) -> tuple[dict, str]:
    """The reply's message and finish reason: the calls the run paused at, or the answer."""
    if not solved.tool_calls:
        return {"role": "assistant", "content": reply(solved)}, "stop"
    calls = [json.loads(call) for call in solved.tool_calls]
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{solved.run_id}_{i}", "type": "function",
         "function": {"name": call["name"], "arguments": json.dumps(call["arguments"])}}
        for i, call in enumerate(calls)]}, "tool_calls"


def usage_of(solved: Solved) -> dict | None:
    """Every token the solve took; absent where a part is unknown, never 0."""
    total = solved.total_cost
    if total.tokens is None:
        return None
    return {"prompt_tokens": total.prompt_tokens, "completion_tokens": total.completion_tokens,
            "total_tokens": total.tokens}


class OpenAIDoor:
    """The HTTP app and its server, on the solving layer the gRPC door shares (its admission, its runs
    by id): `--concurrency`, `--max-queue` and `--max-concurrent` hold across both doors."""

    def __init__(self, solving: Solving, *, keepalive_s: float):
        self.solving = solving
        self.keepalive_s = keepalive_s
        self.server: uvicorn.Server | None = None
        self._serving: asyncio.Task | None = None
        self.app = Starlette(routes=[
            Route("/v1/chat/completions", self.chat_completions, methods=["POST"]),
            Route("/v1/models", self.models, methods=["GET"]),
            Route("/v1/models/{model:path}", self.model, methods=["GET"]),
            Route("/v1/jitagent/feedback", self.feedback, methods=["POST"]),
        ], exception_handlers={404: no_route, 405: no_route})

    # --- serving ---------------------------------------------------------------------------
    async def start(self, host: str, port: int, *, tls_cert=None, tls_key=None, grace_s: float = 10.0) -> int:
        """Listen on host:port (0: a free one) in the running loop; the port. OSError when it cannot bind."""
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(128)
        except OSError:
            sock.close()
            raise
        sock.setblocking(False)
        config = uvicorn.Config(self.app, log_config=None, access_log=False, lifespan="off",
                                ssl_certfile=tls_cert, ssl_keyfile=tls_key, http=_BoundedH11, ws="none",
                                timeout_keep_alive=KEEPALIVE_S,
                                timeout_graceful_shutdown=max(int(grace_s), 1))
        self.server = _InLoopServer(config)
        self._serving = asyncio.create_task(self.server.serve(sockets=[sock]))
        while not self.server.started and not self._serving.done():
            await asyncio.sleep(0.01)
        if self._serving.done():  # e.g. TLS files it cannot read
            sock.close()
            raise OSError(f"the HTTP server did not start: {self._serving.exception()}")
        return sock.getsockname()[1]

    async def stop(self) -> None:
        if self.server is not None and self._serving is not None:
            self.server.should_exit = True
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self._serving

    # --- routes ----------------------------------------------------------------------------
    async def chat_completions(self, request: Request) -> Response:
        try:
            caller = self._authorize(request)
            self._ready()
            chat = ChatRequest.model_validate(await self._json(request))
            task = self._task(chat)
            self.solving.admissible()
        except (ApiError, ValidationError, SolveError) as exc:
            return refused(exc)
        options = chat.jitagent or JitOptions()
        run_id, replay = self.solving.name_run(options.request_id, caller)
        headers = {"x-jitagent-run-id": run_id}
        solve = functools.partial(self._solve, task, run_id, replay, options.n, caller)
        if chat.stream:
            include_usage = bool(chat.stream_options and chat.stream_options.include_usage)
            events = self._sse(solve, run_id, chat.model, include_usage)
            return StreamingResponse(events, media_type="text/event-stream", headers=headers)
        try:
            solved = await solve()
        except ApiError as exc:
            return exc.response(headers)
        return JSONResponse(self._completion(solved, chat.model), headers=headers)

    async def models(self, request: Request) -> Response:
        try:
            caller = self._authorize(request)
            clusters = await self.solving.cluster_names()
        except (ApiError, SolveError) as exc:
            return refused(exc)
        pool = self.solving.access.pool(caller)  # a tenant sees the types of its own memory
        typed = f"{pool}/type:" if pool else "type:"
        names = [MODEL] + sorted(f"{MODEL}/{c.removeprefix(typed)}" for c in clusters if c.startswith(typed))
        return JSONResponse({"object": "list", "data": [model_object(name) for name in names]})

    async def model(self, request: Request) -> Response:
        """`GET /v1/models/{id}`: `jitagent`, or `jitagent/<type>` (any type: a new one is a new cluster)."""
        name = request.path_params["model"]
        try:
            self._authorize(request)
            self._ready()
            task_type(name)
        except ApiError as exc:
            return exc.response()
        return JSONResponse(model_object(name))

    async def feedback(self, request: Request) -> Response:
        """{"run_id", "reward" in [0, 1], "detail"?, "wall_s"?, "prompt_tokens"?, "completion_tokens"?}."""
        try:
            caller = self._authorize(request)
            self._ready()
            body = FeedbackRequest.model_validate(await self._json(request))
            report = Report(body.reward, body.detail, prompt_tokens=body.prompt_tokens,
                            completion_tokens=body.completion_tokens, wall_s=body.wall_s)
            done = await self.solving.report(report, caller, run_id=body.run_id, door="openai")
        except (ApiError, ValidationError, SolveError) as exc:
            return refused(exc)
        return JSONResponse({"run_id": body.run_id} | done.reported().model_dump())

    # --- the work ----------------------------------------------------------------------------
    async def _solve(self, task, run_id: str, replay: bool, n: int | None, caller: Caller) -> Solved:
        """One task through the solving layer; ApiError says why it did not finish. A client that goes
        away cancels this, and with it the run (unless another call follows it)."""
        try:
            with self.solving.admitted(caller):
                result = await self.solving.solve(task, run_id=run_id, replay=replay, n=n, door="openai",
                                                  caller=caller)
            return result.solved()
        except SolveError as exc:
            raise ApiError.of(exc) from None

    async def _sse(self, solve: Callable[[], Awaitable[Solved]], run_id: str, model: str,
                   include_usage: bool) -> AsyncIterator[str]:
        """Keep-alive comments while the solve works, then the answer, the end, [DONE]."""
        work = asyncio.ensure_future(solve())
        try:
            while not (await asyncio.wait({work}, timeout=self.keepalive_s))[0]:
                yield ": keep-alive\n\n"
            try:
                solved = work.result()
            except ApiError as exc:
                yield _event({"error": {"message": str(exc), "type": "server_error", "param": None,
                                        "code": exc.code}})
                yield "data: [DONE]\n\n"
                return
            head = {"id": run_id, "object": "chat.completion.chunk", "created": int(time.time()),
                    "model": model, "jitagent": solved.model_dump(mode="json")}
            delta, finish = assistant_message(solved)
            if "tool_calls" in delta:  # as OpenAI streams them: each call with its index
                delta = {"role": "assistant", "tool_calls": [{"index": i} | call
                                                             for i, call in enumerate(delta["tool_calls"])]}
            yield _event(head | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            yield _event(head | {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
            if include_usage and (usage := usage_of(solved)) is not None:
                yield _event(head | {"choices": [], "usage": usage})
            yield "data: [DONE]\n\n"
        finally:  # the client went away (or the stream ended): stop the work
            if not work.done():
                work.cancel()

    @staticmethod
    def _completion(solved: Solved, model: str) -> dict:
        message, finish = assistant_message(solved)
        completion: dict[str, Any] = {
            "id": solved.run_id, "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "jitagent": solved.model_dump(mode="json")}
        if (usage := usage_of(solved)) is not None:
            completion["usage"] = usage
        return completion

    # --- checks ----------------------------------------------------------------------------
    def _authorize(self, request: Request) -> Caller:
        caller = self.solving.access.caller(request.headers.get("authorization"))
        if caller is None:
            raise ApiError(401, "missing or invalid bearer token", code="invalid_api_key")
        return caller

    def _ready(self) -> None:
        try:
            self.solving.ready()
        except SolveError as exc:
            raise ApiError.of(exc) from None

    @staticmethod
    def _task(chat: ChatRequest):
        """The task, or ApiError naming the part of the request that is wrong."""
        options = chat.jitagent or JitOptions()
        try:
            verifier = verifier_for(options.expect, options.verifier)
        except ValueError as exc:  # `expect` alone always makes one
            raise ApiError(400, str(exc), "jitagent.verifier" if options.expect is None else "jitagent") \
                from None
        tools = client_tools(chat)
        try:  # with a verifier and the tools made, only the text and the tool choice are left to be wrong
            return task_for(conversation_text(chat.messages), type=task_type(chat.model), verifier=verifier,
                            client_tools=tools, tool_choice=AUTO if chat.choice == "none" else chat.choice,
                            parallel_calls=chat.parallel_tool_calls)
        except ValueError as exc:
            param = "tool_choice" if "tool_choice" in str(exc) else "messages"
            raise ApiError(400, str(exc), param) from None

    @staticmethod
    async def _json(request: Request) -> Any:
        """The body as JSON, read no further than MAX_BODY_BYTES (refused at once where its declared
        length is over: a client that declares 10**12 bytes and sends two would hold the read open)."""
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and (len(declared) > 10 or int(declared) > MAX_BODY_BYTES):
            raise ApiError(413, f"request body over {MAX_BODY_BYTES:,} bytes (declared {declared[:20]})")
        body = bytearray()
        try:
            async for chunk in request.stream():
                body += chunk
                if len(body) > MAX_BODY_BYTES:
                    raise ApiError(413, f"request body over {MAX_BODY_BYTES:,} bytes")
        except ClientDisconnect:  # uncaught, each one logged a traceback: a way to fill the log
            raise ApiError(400, "the client left before its body was whole") from None
        from jitagent.common.safe_loading import NestingError, json_loads

        try:
            return json_loads(body.decode())
        except (ValueError, NestingError) as exc:
            raise ApiError(400, f"the body is not JSON: {exc}") from None


class FeedbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    run_id: str = Field(min_length=1)
    reward: float
    detail: str = ""
    wall_s: float | None = None
    prompt_tokens: int | None = Field(None, ge=0)
    completion_tokens: int | None = Field(None, ge=0)


class _InLoopServer(uvicorn.Server):
    """uvicorn inside the gRPC server's event loop: that server owns SIGTERM and SIGINT and stops both."""

    @contextlib.contextmanager
    def capture_signals(self):
        yield


def max_connections() -> int:
    """A quarter of the process's descriptor limit, at most MAX_CONNECTIONS."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return MAX_CONNECTIONS if soft == resource.RLIM_INFINITY else max(16, min(MAX_CONNECTIONS, soft // 4))


class _BoundedH11(H11Protocol):
    """uvicorn's HTTP/1.1 with bounds on what a client holds: past `max_connections()` open at once a new
    connection is closed as it comes, and one whose request (headers and body) has not all arrived
    within REQUEST_TIMEOUT_S of it opening or of the last response is closed (uvicorn has no such
    timeout: an idle client that never sends a byte held its descriptor for ever)."""

    _timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:
        super().connection_made(transport)
        if len(self.connections) > max_connections():
            transport.abort()
            return
        self._arm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
        super().connection_lost(exc)

    def _arm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self.loop.call_later(REQUEST_TIMEOUT_S, self._request_overdue)

    def _request_overdue(self) -> None:
        # IDLE: not one whole request line and headers; SEND_BODY: the body still coming. A request being
        # answered (DONE) may take as long as its solve takes.
        if self.conn.their_state in (h11.IDLE, h11.SEND_BODY) and not self.transport.is_closing():
            self.transport.close()


def _event(data: dict) -> str:
    return f"data: {json.dumps(data)}\n\n"
