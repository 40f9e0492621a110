"""JSON and YAML from untrusted text with their nesting capped: a clear error, never a
RecursionError from deep input, and no YAML aliases (an alias bomb expands into billions of nodes)."""

from __future__ import annotations

import json

import yaml

MAX_DEPTH = 32  # tasks and specs nest 3 or 4 levels deep
MAX_NODES = 200_000


class NestingError(ValueError):
    """A document nested deeper, or holding more values, than a task or a spec ever needs, or a value
    no task or spec needs (an integer of 10,000 digits)."""


class _NoAliasLoader(yaml.SafeLoader):
    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(None, None, "YAML aliases are not allowed", mark)
        return super().compose_node(parent, index)


def check_nesting(value: object) -> object:
    """`value` itself, or NestingError when it nests deeper than MAX_DEPTH or holds over MAX_NODES values."""
    stack, seen = [(value, 1)], 0
    while stack:
        item, depth = stack.pop()
        seen += 1
        if depth > MAX_DEPTH:
            raise NestingError(f"nested deeper than {MAX_DEPTH} levels")
        if seen > MAX_NODES:
            raise NestingError(f"more than {MAX_NODES} values")
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, depth + 1) for child in children)
    return value


def unreadable(exc: ValueError) -> str:
    # Python's message, without its advice to raise its cap (sys.set_int_max_str_digits)
    return f"a value that cannot be read: {str(exc).split(';')[0]}"


def json_loads(text: str | bytes) -> object:
    """json.loads with nesting capped; json.JSONDecodeError for what does not parse."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise NestingError(f"nested deeper than {MAX_DEPTH} levels") from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise
    except ValueError as exc:  # parsed, but past what Python holds: an integer of over 4,300 digits
        raise NestingError(unreadable(exc)) from None
    return check_nesting(value)


def yaml_load(text: str) -> object:
    """yaml.safe_load without aliases and with nesting capped; yaml.YAMLError for what does not parse."""
    try:
        value = yaml.load(text, Loader=_NoAliasLoader)  # noqa: S506 - a SafeLoader subclass
    except RecursionError:
        raise NestingError(f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # parsed, but past what Python holds: 4,300 digits, a 13th month
        raise NestingError(unreadable(exc)) from None
    return check_nesting(value)
