"""A flat record (a pydantic model) into the protobuf message of the same shape and back, field by field by
name: the one conversion a result needs on the wire, so a new field needs no line here."""

from __future__ import annotations

from typing import Any, get_args

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from pydantic import BaseModel

from jitagent.protocol.tasks import enum_prefix


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
            number = field.enum_type.values_by_name[enum_prefix(field.enum_type) + value.upper()].number
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
            label = field.enum_type.values_by_number[value].name
            value = label.removeprefix(enum_prefix(field.enum_type)).lower()
        elif field.is_repeated:
            value = tuple(value)
        elif not message.HasField(name) if field.has_presence else optional and value == field.default_value:
            value = None
        values[name] = value
    return model(**values)
