"""Tasks on the wire (jitagent.v1) and back, in one place so that client and server agree: a task
round-trips unchanged, verifier included (every built-in suite is tested). Bad input raises
RequestError naming the field."""

from __future__ import annotations

import regex
from pydantic import ValidationError

from jitagent.harness.spec import format_validation_error
from jitagent.tasks.task import Task, VerifierSpec, derived_id, prompt_problem
from jitagent.v1 import jitagent_pb2 as pb

DEFAULT_TOLERANCE = VerifierSpec.model_fields["tolerance"].default


class RequestError(ValueError):
    """A bad request: each violation is (field, what is wrong); the message joins them."""

    def __init__(self, field: str, description: str, *more: tuple[str, str]):
        self.violations = [(field, description), *more]
        super().__init__("; ".join(f"{f}: {d}" for f, d in self.violations))


def enum_value(enum, prefix: str, name: str) -> int:
    """A Python-side name as its enum value: ("ROUTE", "synthesized") → ROUTE_SYNTHESIZED."""
    return enum.Value(f"{prefix}_{name.upper()}")


def enum_name(enum, prefix: str, value: int) -> str:
    """An enum value as the Python-side name: ROUTE_SYNTHESIZED → "synthesized"."""
    return enum.Name(value).removeprefix(prefix + "_").lower()


def task_to_proto(task: Task | str) -> pb.Task:
    if isinstance(task, str):
        return pb.Task(prompt=task)
    msg = pb.Task(id=task.id, prompt=task.prompt, type=task.type or "", tags=task.tags, files=task.files,
                  verifier=verifier_to_proto(task.verifier), public_tests=task.public_tests or "",
                  split=enum_value(pb.Split, "SPLIT", task.split) if task.split else pb.SPLIT_UNSPECIFIED)
    if task.tools is not None:
        msg.tools.SetInParent()  # present and empty: no tool allowed
        msg.tools.names.extend(task.tools)
    return msg


def verifier_to_proto(v: VerifierSpec) -> pb.Verifier:
    if v.kind == "none":
        return pb.Verifier()
    if v.kind == "exact":
        return pb.Verifier(exact=pb.ExactAnswer(expected="" if v.expected is None else str(v.expected),
                                                case_sensitive=v.case_sensitive))
    if v.kind == "numeric":
        try:
            expected = float(v.expected)
        except (TypeError, ValueError):
            raise RequestError("verifier.expected", f"not a number: {v.expected!r}") from None
        return pb.Verifier(numeric=pb.NumericAnswer(expected=expected, tolerance=v.tolerance))
    if v.kind == "regex":
        return pb.Verifier(regex=pb.RegexMatch(pattern=v.pattern or "", case_sensitive=v.case_sensitive))
    if v.kind == "python_tests":
        return pb.Verifier(python_tests=pb.PythonTests(tests=v.tests or "", prelude=v.prelude or ""))
    if v.kind == "shell_check":
        return pb.Verifier(shell_check=pb.ShellCheck(command=v.command or ""))
    return pb.Verifier(
        reasoning_gym=pb.ReasoningGymEntry(dataset=v.dataset, seed=v.seed, size=v.size, index=v.index)
    )


def verifier_from_proto(msg: pb.Verifier) -> dict:
    """The verifier as VerifierSpec fields (unchecked)."""
    kind = msg.WhichOneof("kind")
    if kind is None:
        return {"kind": "none"}
    if kind == "exact":
        return {"kind": kind, "expected": msg.exact.expected, "case_sensitive": msg.exact.case_sensitive}
    if kind == "numeric":
        expected = msg.numeric.expected  # a whole number comes back as the int it was sent as
        return {
            "kind": kind,
            "expected": int(expected) if expected.is_integer() else expected,
            "tolerance": msg.numeric.tolerance if msg.numeric.HasField("tolerance") else DEFAULT_TOLERANCE,
        }
    if kind == "regex":
        return {"kind": kind, "pattern": msg.regex.pattern, "case_sensitive": msg.regex.case_sensitive}
    if kind == "python_tests":
        return {
            "kind": kind,
            "tests": msg.python_tests.tests or None,
            "prelude": msg.python_tests.prelude or None,
        }
    if kind == "shell_check":
        return {"kind": kind, "command": msg.shell_check.command or None}
    gym = msg.reasoning_gym
    return {"kind": kind, "dataset": gym.dataset, "seed": gym.seed, "size": gym.size, "index": gym.index}


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
            split=enum_name(pb.Split, "SPLIT", msg.split) if msg.split else None,
            public_tests=msg.public_tests or None,
            verifier=verifier_from_proto(msg.verifier),
        )
    except ValidationError as exc:
        raise RequestError(where, format_validation_error(exc)) from None
    if task.verifier.kind == "regex":
        try:
            regex.compile(task.verifier.pattern or "")  # bounded: Task caps a pattern's length
        except regex.error as exc:
            raise RequestError(f"{where}.verifier.regex.pattern", f"does not compile: {exc}") from None
    return task
