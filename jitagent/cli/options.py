"""What a command line's values are checked with: exit statuses and the one-line `Failure`, numbers in their
range (`Bounded`, and `FieldRange`: a config model's field's own range), a URL that carries no password, and
help that says each option's range and default. Imports nothing of the CLI, so `settings` and `common` both
build on it."""

from __future__ import annotations

import argparse
import functools
import math
import pkgutil
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

USAGE, RUNTIME = 2, 1  # exit statuses: the command line was wrong / the work failed


HIDDEN = argparse.SUPPRESS


META_MODEL = "embedded"  # the model that writes harnesses, and runs them, unless told otherwise
# Options several commands take, in the same words wherever they are (each command adds its own default)
TOOL_WRITER = "the model that writes code for clusters"
CORRECTIONS = "failed runs an expert model corrects at most, for the adapter's training data"


class Failure(Exception):
    """A failure already worded for the user; `status` is the exit status."""

    def __init__(self, message: str, status: int = RUNTIME):
        super().__init__(message)
        self.status = status


def without_password(hint: str):
    """An argparse type: a URL that carries no password (argv shows in /proc to every process)."""
    def check(value: str) -> str:
        if "://" in value and urlsplit(value).password is not None:
            raise argparse.ArgumentTypeError(f"a password in argv shows in /proc to every process; {hint}")
        return value
    return check


class OutOfRange(argparse.ArgumentTypeError, ValueError):
    """A number outside its option's range, or not a number; the message says the range and the value."""


NUMBER_NAMES = {int: "an integer", float: "a number"}


@dataclass(frozen=True)
class Bounded:
    """An argparse type (and a Setting's parse): a number of `kind` in its range, where `low`/`high` are
    None when open and `exclusive_low` keeps `low` itself out (a budget of 0 s is none)."""

    kind: type
    low: float | None = None
    high: float | None = None
    exclusive_low: bool = False

    def __call__(self, text) -> int | float:
        try:
            value = self.kind(text)
        except (TypeError, ValueError):
            raise OutOfRange(f"expected {NUMBER_NAMES[self.kind]}, got {text!r}") from None
        too_low = self.low is not None and (value <= self.low if self.exclusive_low else value < self.low)
        if not math.isfinite(value) or too_low or (self.high is not None and value > self.high):
            raise OutOfRange(f"must be {self.rule}, got {text}")
        return value

    def _shown(self, bound: float) -> str:
        return str(int(bound)) if self.kind is int else f"{bound:g}"  # 4294967295, not 4.29497e+09

    @property
    def name(self) -> str:
        return NUMBER_NAMES[self.kind]

    @property
    def rule(self) -> str:
        low, high = (None if b is None else self._shown(b) for b in (self.low, self.high))
        if low is not None and high is not None:
            return f"between {low} and {high}"
        if low is not None:
            return f"more than {low}" if self.exclusive_low else f"at least {low}"
        return f"at most {high}" if high is not None else "a finite number"


COUNT = Bounded(int, 1)  # how many of something: at least one


SECONDS = Bounded(float, 0, exclusive_low=True)  # a time budget: zero or less would run nothing


SEED = Bounded(int, 0)


class FieldRange:
    """An argparse type: the range a pydantic model's field allows (`module:Model`, `field`). One source
    for the rule, the model's: the command line refuses what the model would, naming the option instead
    of the model. The model is imported when the option is given or --help shown, not on every start."""

    def __init__(self, model: str, field: str):
        self.model, self.field = model, field

    @functools.cached_property
    def bounded(self) -> Bounded:
        info = pkgutil.resolve_name(self.model).model_fields[self.field]
        kind = next(t for t in (int, float) if info.annotation in (t, t | None))
        bounds = {type(m).__name__: m for m in info.metadata}
        low = bounds["Ge"].ge if "Ge" in bounds else bounds["Gt"].gt if "Gt" in bounds else None
        return Bounded(kind, low, bounds["Le"].le if "Le" in bounds else None, exclusive_low="Gt" in bounds)

    def __call__(self, text) -> int | float:
        return self.bounded(text)

    @property
    def name(self) -> str:
        return self.bounded.name

    @property
    def rule(self) -> str:
        return self.bounded.rule


CANDIDATES = FieldRange("jitagent.improvement.synthesis.synthesize:SynthesisConfig", "n")  # --n everywhere


SAID_DEFAULT = re.compile(r" \(default: ([^()]*)\)")


class RangeHelp(argparse.HelpFormatter):
    """Help that says each numeric option's range, from its type (the rule that checks it), and its
    default where the help does not say it (a number or a word; not a switch's False)."""

    def _get_help_string(self, action) -> str:
        """One way everywhere: the help, then one parenthesis `(range; default: X)`."""
        text = action.help or ""
        if text == HIDDEN:
            return text
        notes = [rule] if (rule := getattr(action.type, "rule", None)) else []
        default = action.default
        if said := SAID_DEFAULT.search(text):  # the help's own words for its default join the one parenthesis
            text, default = text[:said.start()] + text[said.end():], said.group(1)
        elif "default" in text or isinstance(default, bool) or default in (HIDDEN, ""):
            default = None
        if isinstance(default, (int, float, str)):
            notes.append(f"default: {default}")
        return f"{text} ({'; '.join(notes)})" if notes else text


def top_k(value: str) -> int | None:
    """An argparse type: 'all' → None; 'top:K' → K."""
    if value == "all":
        return None
    if value.startswith("top:") and value[4:].isdigit() and int(value[4:]) > 0:
        return int(value[4:])
    raise argparse.ArgumentTypeError(f"expected 'all' or 'top:K' with K > 0, got {value!r}")
