"""One solved task as every door gives it: one flat record, made in one place (`Solved.of`).

The gRPC result (`pb.SolveResult`), the SDK's result, the HTTP door's `jitagent` object, MCP's `solve`
result and a worker's result entry are this record in their wire form, converted by field name
(`to_message`, `from_message`): a new field is this record's, `of`'s line for it, and the proto's.
Kept free of the server's imports: the SDK reads it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, get_args

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from jitagent.events import SolveResult
    from jitagent.runtime.events import Cost


class Spent(BaseModel):
    """Tokens and wall time; a token count of None is unknown, never 0."""

    model_config = ConfigDict(frozen=True)
    prompt_tokens: int | None
    completion_tokens: int | None
    wall_s: float

    @property
    def tokens(self) -> int | None:
        known = self.prompt_tokens is not None and self.completion_tokens is not None
        return self.prompt_tokens + self.completion_tokens if known else None

    @classmethod
    def of(cls, cost: Cost) -> Spent:
        return cls(prompt_tokens=cost.prompt_tokens, completion_tokens=cost.completion_tokens,
                   wall_s=cost.wall_s)


class Solved(BaseModel):
    """One solved task. `passed` and `reward` are None when nothing verified the answer: unknown, not a
    failure — a report (`report`, `ReportOutcome`, the feedback route) can say how it went."""

    model_config = ConfigDict(frozen=True)
    run_id: str = Field(description="the run's id: report on it, or solve again with it for this result")
    task_id: str
    route: str = Field(description="exploit | explore | synthesized | fallback")
    harness_id: str
    harness_name: str
    cluster: str
    answer: str | None = Field(description="None: the harness gave no answer")
    passed: bool | None
    reward: float | None = Field(description="None: nothing verified it")
    verdict: str
    error: str | None = Field(description="an infrastructure failure, not the harness's doing")
    interrupted: bool = Field(description="stopped from outside: the caller's deadline or cancel")
    cost: Spent = Field(description="the run's tokens and wall time")
    total_cost: Spent = Field(description="every token of the solve: synthesis, repair, dry runs, "
                                          "selection and the run")
    wall_s: float = Field(description="the whole solve")
    bank_decision: str = Field(description="the admission's decision on a verified run; empty: none")
    examples: tuple[str, ...] = Field(description="the runs whose verified solutions the harness was shown")

    @property
    def verified(self) -> bool:
        return self.reward is not None

    @classmethod
    def of(cls, result: SolveResult) -> Solved:
        """The record of a pipeline's result (a live run's or one read back from the bank)."""
        from jitagent.runtime.events import Cost

        run = result.run
        return cls(run_id=result.run_id, task_id=result.task_id, route=result.route,
                   harness_id=result.harness.id, harness_name=result.harness.name, cluster=result.cluster,
                   answer=run.answer if run else None, passed=run.passed if run else None,
                   reward=run.reward if run else None, verdict=run.verdict if run else "",
                   error=run.error if run else None, interrupted=run.interrupted if run else False,
                   cost=Spent.of(run.cost if run else Cost()), total_cost=Spent.of(result.total_cost),
                   wall_s=result.wall_s, bank_decision=result.bank_decision, examples=result.examples)


def to_message(record: BaseModel, message: Message) -> Message:
    """`record`'s fields into the same-named fields of `message`: None leaves a field absent (unknown),
    an enum takes its value by name (`route` "exploit" → ROUTE_EXPLOIT), a nested record its message."""
    for field in message.DESCRIPTOR.fields:
        value = getattr(record, field.name, None)
        if value is None:
            continue
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            to_message(value, getattr(message, field.name))
        elif field.type == FieldDescriptor.TYPE_ENUM:
            number = field.enum_type.values_by_name[_enum_prefix(field) + value.upper()].number
            setattr(message, field.name, number)
        elif field.is_repeated:
            getattr(message, field.name).extend(value)
        else:
            setattr(message, field.name, value)
    return message


def from_message(model: type[BaseModel], message: Message) -> Any:
    """The record `model` read from `message`'s same-named fields: an absent field is None, and so is an
    empty one where the record's field may be None (proto3 strings without presence: "" is none)."""
    values = {}
    for name, info in model.model_fields.items():
        field = message.DESCRIPTOR.fields_by_name[name]
        value = getattr(message, name)
        optional = type(None) in get_args(info.annotation)
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            value = from_message(info.annotation, value)
        elif field.type == FieldDescriptor.TYPE_ENUM:
            value = field.enum_type.values_by_number[value].name.removeprefix(_enum_prefix(field)).lower()
        elif field.is_repeated:
            value = tuple(value)
        elif not message.HasField(name) if field.has_presence else optional and value == field.default_value:
            value = None
        values[name] = value
    return model(**values)


def _enum_prefix(field: FieldDescriptor) -> str:
    """ROUTE_ for jitagent.v1.Route: the enum's values carry its name in capitals."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", field.enum_type.name).upper() + "_"
