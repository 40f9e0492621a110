"""The synchronous Python SDK: one call per thing, typed results.

    from jitagent import JitAgent

    with JitAgent("127.0.0.1:50051") as agent:
        solved = agent.solve("What is 6 * 7?", expect="42")  # a jitagent.solving.result.Solved
        print(solved.answer, solved.reward)              # reward None: nobody verified it
        agent.report(solved.run_id, reward=1.0)          # where only you can tell

For events as they happen, or many tasks in one stream, use the async `JitAgentClient`.
"""

from __future__ import annotations

import functools
import inspect
import json
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import grpc
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc

from jitagent import DEFAULT_ADDRESS
from jitagent.harness.spec import format_validation_error
from jitagent.protocol.client import channel_options, new_request_id, report_request
from jitagent.protocol.records import from_message
from jitagent.protocol.tasks import enum_name, task_to_proto
from jitagent.solving.result import Reported, Solved
from jitagent.tasks.conversation import called, returned, transcript
from jitagent.tasks.task import AUTO, ClientTool, Expected, Task, VerifierSpec, derived_id, task_for
from jitagent.v1 import jitagent_pb2 as pb
from jitagent.v1 import jitagent_pb2_grpc as pb_grpc


@functools.lru_cache(maxsize=256)  # one model per function, not one per call
def arguments_of(function: Callable):
    """The pydantic model of a function's arguments, from their type hints (a parameter without one takes
    a string); no others are taken. ValueError for *args or **kwargs, which no schema can name."""
    from pydantic import ConfigDict, create_model

    hints, parameters = typing.get_type_hints(function), inspect.signature(function).parameters
    if loose := [n for n, p in parameters.items() if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]:
        raise ValueError(f"tool {function.__name__}: *{loose[0]} cannot be named in a schema")
    fields = {name: (hints.get(name, str), ... if p.default is inspect.Parameter.empty else p.default)
              for name, p in parameters.items()}
    return create_model(function.__name__, __config__=ConfigDict(extra="forbid"), **fields)


def function_tool(function: Callable) -> ClientTool:
    """A Python function as a client tool: its name, its docstring and its arguments' JSON Schema."""
    schema = arguments_of(function).model_json_schema()
    schema.pop("title", None)
    for field in schema.get("properties", {}).values():
        field.pop("title", None)
    return ClientTool(name=function.__name__, description=inspect.getdoc(function) or "", parameters=schema)


def exchange(calls: list[dict], functions: dict[str, Callable]) -> list[tuple[str, str]]:
    """The turns a paused run's calls add to the conversation: the assistant's calls, then each result,
    the function run here on its arguments checked and converted (what does not fit goes back as the
    result, for the harness to correct)."""
    return [("assistant", "\n".join(called(c["name"], json.dumps(c["arguments"])) for c in calls)),
            *(("tool", returned(c["name"], result_of(functions, c))) for c in calls)]


def result_of(functions: dict[str, Callable], call: dict) -> str:
    from pydantic import ValidationError

    function = functions.get(call["name"])
    if function is None:
        return f"error: no function {call['name']!r}"
    try:
        arguments = arguments_of(function).model_validate(call["arguments"])
    except ValidationError as exc:
        return f"error: {format_validation_error(exc)}"
    result = function(**{name: getattr(arguments, name) for name in type(arguments).model_fields})
    return result if isinstance(result, str) else json.dumps(result, default=str)


class JitAgentError(RuntimeError):
    """A call the server refused or could not finish: `code` (a grpc status name), the server's
    message, and for bad input the offending fields as (field, description) pairs."""

    def __init__(self, code: str, message: str, violations: list[tuple[str, str]] | None = None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.violations = violations or []

    @classmethod
    def of(cls, exc: grpc.RpcError) -> JitAgentError:
        return cls(exc.code().name, exc.details() or "", violations_of(exc))


def violations_of(exc: grpc.RpcError) -> list[tuple[str, str]]:
    """The google.rpc.BadRequest field violations the server attached to an error, if any."""
    found = []
    for key, value in exc.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            for detail in status_pb2.Status.FromString(value).details:
                request = error_details_pb2.BadRequest()
                if detail.Unpack(request):
                    found += [(v.field, v.description) for v in request.field_violations]
    return found


@dataclass(frozen=True)
class Synthesized:
    """The harness the server would run for a task; `spec_json` is the whole spec."""

    run_id: str
    task_id: str
    route: str
    harness_id: str
    harness_name: str
    cluster: str
    spec_json: str
    candidates: int

    @classmethod
    def of(cls, result: pb.SynthesisResult) -> Synthesized:
        return cls(result.run_id, result.task_id, enum_name(pb.Route, result.route),
                   result.harness.id, result.harness.name, result.cluster, result.harness.spec_json,
                   len(result.candidates))


class JitAgent:
    """A synchronous client of a jitagent server. `token`: the server's bearer token; `tls_ca`: the
    PEM that signed its certificate (None: plaintext); `timeout`: seconds per call (None: no limit).
    Errors raise JitAgentError."""

    def __init__(self, address: str = DEFAULT_ADDRESS, *, token: str | None = None,
                 tls_ca: bytes | None = None, timeout: float | None = None, max_message_mb: int = 4):
        options = channel_options(max_message_mb)
        self.channel = (grpc.secure_channel(address, grpc.ssl_channel_credentials(tls_ca), options=options)
                        if tls_ca is not None else grpc.insecure_channel(address, options=options))
        self.stub = pb_grpc.JitAgentStub(self.channel)
        self.metadata = (("authorization", f"Bearer {token}"),) if token else ()
        self.timeout = timeout

    def __enter__(self) -> JitAgent:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.channel.close()

    def _call(self, method, request, timeout: float | None):
        try:
            return method(request, timeout=timeout or self.timeout, metadata=self.metadata)
        except grpc.RpcError as exc:
            raise JitAgentError.of(exc) from None

    def health(self) -> str:
        """SERVING once the server has loaded its models and bank."""
        stub = health_pb2_grpc.HealthStub(self.channel)
        reply = self._call(stub.Check, health_pb2.HealthCheckRequest(), self.timeout or 5.0)
        return health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)

    def solve(self, task: str | Task, *, expect: Expected | None = None,
              verifier: dict | VerifierSpec | None = None, type: str | None = None, n: int = 0,
              timeout: float | None = None, request_id: str | None = None,
              tools: Sequence[Callable] = (), tool_choice: str = AUTO, max_turns: int = 8) -> Solved:
        """Solve one task and return the result. `expect`: the answer that is right (a number is
        compared numerically, anything else exactly); `verifier`: any verifier instead (e.g.
        {"kind": "regex", "pattern": "..."}); neither: unverified. `type` decides the task's
        cluster. `n`: candidates if the server synthesizes (0: its default). `request_id` (default: a
        new one) names the run: solving again with it returns that run's result, never a second run.
        `tools`: Python functions the harness may call (their signatures and docstrings are their schemas):
        where a run pauses at calls, they run here and the conversation goes back as the next task, until
        an answer or `max_turns` runs; `tool_choice` (`required`, or a function's name) holds for the first
        run only, as the Agents SDK resets it, so that the harness can answer from the results."""
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        if isinstance(task, str):
            task = task_for(task, type=type, expect=expect, verifier=verifier)
        if tools:  # the functions are the task's client tools, whatever it carried
            task = Task.model_validate(task.model_dump() | {
                "client_tools": [function_tool(f).model_dump() for f in tools], "tool_choice": tool_choice})
        functions, turns = {f.__name__: f for f in tools}, [("user", task.prompt)]
        for _ in range(max_turns):
            solved = self._solve_once(task, n, timeout, request_id)
            if not (solved.tool_calls and functions):
                break
            turns += exchange([json.loads(call) for call in solved.tool_calls], functions)
            prompt, request_id = transcript(turns), None
            task = task.model_copy(update={"id": derived_id(prompt), "prompt": prompt, "tool_choice": AUTO})
        return solved

    def _solve_once(self, task: Task, n: int, timeout: float | None, request_id: str | None) -> Solved:
        request = pb.SolveRequest(task=task_to_proto(task), n=n, request_id=request_id or new_request_id())
        try:
            for event in self.stub.Solve(request, timeout=timeout or self.timeout, metadata=self.metadata):
                if event.HasField("result"):
                    return from_message(Solved, event.result)
        except grpc.RpcError as exc:
            raise JitAgentError.of(exc) from None
        raise JitAgentError("UNKNOWN", "the server ended the Solve stream without a result")

    def synthesize(self, task: str | Task, *, type: str | None = None, n: int = 0,
                   timeout: float | None = None) -> Synthesized:
        """The harness the server would run for a task, without running it."""
        task = task_for(task, type=type) if isinstance(task, str) else task
        reply = self._call(self.stub.Synthesize, pb.SynthesizeRequest(tasks=[task_to_proto(task)], n=n),
                           timeout)
        return Synthesized.of(reply.results[0])

    def report(self, run_id: str, reward: float, *, detail: str = "", wall_s: float | None = None,
               prompt_tokens: int | None = None, completion_tokens: int | None = None,
               check: VerifierSpec | None = None) -> Reported:
        """How a run went (`reward` in [0, 1]), where the server could not tell: one outcome like any
        other. Cost defaults to what the server measured; a synthesized-only run needs `wall_s`. `check`:
        the check the reward came from (a server practising failures may try the task again with it)."""
        request = report_request(run_id, reward, detail, prompt_tokens, completion_tokens, wall_s, check)
        reply = self._call(self.stub.ReportOutcome, request, self.timeout)
        return from_message(Reported, reply)
