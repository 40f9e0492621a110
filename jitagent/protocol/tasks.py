"""Tasks on the wire (jitagent.v1) and back, in one place so that client and server agree: a task
round-trips unchanged, verifier included (every built-in suite is tested). Bad input raises
RequestError naming the field."""

from __future__ import annotations

import json
import re
from typing import get_args

import regex
from google.protobuf.descriptor import FieldDescriptor
from pydantic import ValidationError

from jitagent.common.safe_loading import NestingError, json_loads
from jitagent.harness.spec import format_validation_error
from jitagent.tasks.task import AUTO, Task, VerifierSpec, derived_id, prompt_problem
from jitagent.v1 import jitagent_pb2 as pb

# The one table of verifier kinds: VerifierSpec's `kind`; on the wire each is the `Verifier` oneof's field of
# the same name, whose message's fields are the spec's fields of the same names (a test holds the two alike).
VERIFIER_KINDS = get_args(VerifierSpec.model_fields["kind"].annotation)
EMPTY_IS_NONE = frozenset({"tests", "prelude", "command"})  # texts the spec holds as None when there are none


class RequestError(ValueError):
    """A bad request: each violation is (field, what is wrong); the message joins them."""

    def __init__(self, field: str, description: str, *more: tuple[str, str]):
        self.violations = [(field, description), *more]
        super().__init__("; ".join(f"{f}: {d}" for f, d in self.violations))


def enum_prefix(enum) -> str:
    """ROUTE_ for jitagent.v1.Route (the enum or its descriptor): an enum's values carry its name in
    capitals, as proto3 values share the package's scope."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", getattr(enum, "DESCRIPTOR", enum).name).upper() + "_"


def enum_value(enum, name: str) -> int:
    """A Python-side name as its enum value: (Route, "synthesized") → ROUTE_SYNTHESIZED."""
    return enum.Value(enum_prefix(enum) + name.upper())


def enum_name(enum, value: int) -> str:
    """An enum value as the Python-side name: ROUTE_SYNTHESIZED → "synthesized"."""
    return enum.Name(value).removeprefix(enum_prefix(enum)).lower()


def task_to_proto(task: Task | str) -> pb.Task:
    if isinstance(task, str):
        return pb.Task(prompt=task)
    msg = pb.Task(id=task.id, prompt=task.prompt, type=task.type or "", tags=task.tags, files=task.files,
                  verifier=verifier_to_proto(task.verifier), public_tests=task.public_tests or "",
                  split=enum_value(pb.Split, task.split) if task.split else pb.SPLIT_UNSPECIFIED,
                  tool_choice=task.tool_choice if task.client_tools else "",
                  single_call=not task.parallel_calls,
                  client_tools=[pb.ClientTool(name=t.name, description=t.description, parameters=json.dumps(
                      t.parameters)) for t in task.client_tools])
    if task.tools is not None:
        msg.tools.SetInParent()  # present and empty: no tool allowed
        msg.tools.names.extend(task.tools)
    return msg


def verifier_to_proto(v: VerifierSpec) -> pb.Verifier:
    """Field by field (VERIFIER_KINDS): a text absent in the spec is "" on the wire."""
    msg = pb.Verifier()
    if v.kind == "none":
        return msg
    part = getattr(msg, v.kind)
    part.SetInParent()  # the kind, even where every field is its default
    for field in part.DESCRIPTOR.fields:
        value = getattr(v, field.name)
        if field.type == FieldDescriptor.TYPE_STRING:
            value = "" if value is None else str(value)
        elif field.type == FieldDescriptor.TYPE_DOUBLE:
            try:
                value = float(value)
            except (TypeError, ValueError):
                raise RequestError(f"verifier.{field.name}", f"not a number: {value!r}") from None
        setattr(part, field.name, value)
    return msg


def verifier_from_proto(msg: pb.Verifier) -> dict:
    """The verifier as VerifierSpec fields (unchecked): an optional field left unset takes the spec's default,
    a whole number comes back as the int it was sent as, and "" is none where the spec has no text for it."""
    kind = msg.WhichOneof("kind")
    if kind is None:
        return {"kind": "none"}
    part, spec = getattr(msg, kind), {"kind": kind}
    for field in part.DESCRIPTOR.fields:
        value = getattr(part, field.name)
        if field.has_presence and not part.HasField(field.name):
            continue
        if field.type == FieldDescriptor.TYPE_DOUBLE and field.name == "expected" and value.is_integer():
            value = int(value)
        spec[field.name] = None if value == "" and field.name in EMPTY_IS_NONE else value
    return spec


def client_tool_from_proto(msg: pb.ClientTool, where: str) -> dict:
    """A client tool's fields; RequestError where its schema is not JSON (Task checks the rest)."""
    try:
        parameters = json_loads(msg.parameters) if msg.parameters else {"type": "object", "properties": {}}
    except (ValueError, NestingError) as exc:
        raise RequestError(f"{where}.parameters", f"not JSON: {exc}") from None
    return {"name": msg.name, "description": msg.description, "parameters": parameters}


def task_from_proto(msg: pb.Task, where: str = "task") -> Task:
    if problem := prompt_problem(msg.prompt):
        raise RequestError(f"{where}.prompt", problem)
    if msg.split not in pb.Split.values():
        raise RequestError(f"{where}.split", f"unknown value {msg.split}")
    try:
        task = Task(
            id=msg.id or derived_id(msg.prompt),
            prompt=msg.prompt,
            type=msg.type or None,
            tags=list(msg.tags),
            files=dict(msg.files),
            tools=list(msg.tools.names) if msg.HasField("tools") else None,
            split=enum_name(pb.Split, msg.split) if msg.split else None,
            public_tests=msg.public_tests or None,
            verifier=verifier_from_proto(msg.verifier),
            client_tools=[client_tool_from_proto(t, f"{where}.client_tools[{i}]")
                          for i, t in enumerate(msg.client_tools)],
            tool_choice=msg.tool_choice or AUTO,
            parallel_calls=not msg.single_call,
        )
    except ValidationError as exc:
        raise RequestError(where, format_validation_error(exc)) from None
    compiles(task.verifier, f"{where}.verifier")
    return task


def compiles(verifier: VerifierSpec, where: str) -> None:
    """RequestError where a regex verifier's pattern does not compile."""
    if verifier.kind == "regex":
        try:
            regex.compile(verifier.pattern or "")  # bounded: VerifierSpec caps a pattern's length
        except regex.error as exc:
            raise RequestError(f"{where}.regex.pattern", f"does not compile: {exc}") from None


def check_from_proto(msg: pb.Verifier, where: str) -> VerifierSpec:
    """A verifier sent on its own (a report's check), checked as a task's is."""
    try:
        verifier = VerifierSpec(**verifier_from_proto(msg))
    except ValidationError as exc:
        raise RequestError(where, format_validation_error(exc)) from None
    compiles(verifier, where)
    return verifier
