"""What every `jitagent` command shares: options (argparse parent parsers, so each is spelled the same
everywhere and accepted after the subcommand), one-line errors with the right exit status, tables
that never cut an id.

An option carries its default where it is defined. A group and its subcommands carry the shared
options alike, and a subcommand parses into the namespace its group filled (`Subcommands`), so the
group's spelling (`client --address A solve`) and the subcommand's (`client solve --address A`)
both work and a default never overwrites a value given at the other place.
"""

from __future__ import annotations

import argparse
import functools
import math
import pkgutil
import sys
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from rich.table import Table

from jitagent.cli.terminal import TerminalConsole, visible

USAGE, RUNTIME = 2, 1  # exit statuses: the command line was wrong / the work failed
HIDDEN = argparse.SUPPRESS
META_MODEL = "embedded"  # the model that writes harnesses, and runs them, unless told otherwise


class Subcommands(argparse._SubParsersAction):
    """Subcommands that parse into the namespace their group filled. argparse gives each a fresh one and
    copies it back, defaults included, so `client --address A solve` would lose A to solve's own
    default of --address. So set_defaults belong on the subcommand that runs (func): a group's would
    shadow them."""

    def __call__(self, parser, namespace, values, option_string=None):
        name, *rest = values  # a name argparse already checked against the choices
        if self.dest is not argparse.SUPPRESS:
            setattr(namespace, self.dest, name)
        command = self.choices[name]
        namespace.prog = command.prog  # the full name of the command that runs, for its messages
        _, unknown = command.parse_known_args(rest, namespace)
        if unknown:  # for the top parser to refuse, as argparse's own action leaves them
            vars(namespace).setdefault(argparse._UNRECOGNIZED_ARGS_ATTR, []).extend(unknown)


class Parser(argparse.ArgumentParser):
    """A parser whose usage errors are one line, not the usage block, and whose subcommands keep what
    their group was given."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", RangeHelp)
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", Subcommands)

    def error(self, message: str):
        message = message.removeprefix("argument ")  # `--n: must be ...`, the option as it is typed
        self.exit(USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


class Failure(Exception):
    """A failure already worded for the user; `status` is the exit status."""

    def __init__(self, message: str, status: int = RUNTIME):
        super().__init__(message)
        self.status = status


def parent_parser() -> argparse.ArgumentParser:
    """A parser to share options through (`parents=`)."""
    return argparse.ArgumentParser(add_help=False)


def common() -> argparse.ArgumentParser:
    p = parent_parser()
    p.add_argument("--debug", action="store_true", help="show the traceback of a failure")
    return p


def output(file_help: str | None = None) -> argparse.ArgumentParser:
    p = parent_parser()
    p.add_argument("--json", action="store_true", help="print JSON to stdout")
    if file_help:
        p.add_argument("--out", type=Path, metavar="FILE", help=file_help)
    return p


def models(*, meta: bool = True, solver: bool = True,
           old_model: str | None = None) -> argparse.ArgumentParser:
    """`--meta-model` / `--solver-model`; `old_model`: the dest the old `--model` spelling meant here.
    Without `meta`, the solver runs the meta-model's default."""
    from jitagent.models import MODEL_CHOICES

    p = parent_parser()
    if meta:
        p.add_argument("--meta-model", default=META_MODEL,
                       help=f"writes harnesses: {MODEL_CHOICES} (default: {META_MODEL})")
    if solver:
        p.add_argument("--solver-model", default=None if meta else META_MODEL,
                       help="runs them, same choices (default: the meta-model)" if meta
                       else f"runs the harnesses: {MODEL_CHOICES} (default: {META_MODEL})")
    if old_model:
        p.add_argument("--model", dest=old_model, default=HIDDEN, help=HIDDEN)  # no default of its own
    p.add_argument("--api-key-file", type=Path, metavar="FILE", help="a file holding the API key of an "
                   "OpenAI-compatible endpoint (or set JITAGENT_API_KEY)")
    p.add_argument("--api-key", help=HIDDEN)  # refused: a secret in argv
    return p


def bank(*, old_path: bool = False) -> argparse.ArgumentParser:
    """`--data-dir` (the embedded bank is DATA_DIR/bank.db) and `--bank` (a file or a shared database)."""
    p = parent_parser()
    p.add_argument("--data-dir", type=Path, metavar="DIR",
                   help="the bank's folder: DIR/bank.db (default: $JITAGENT_DATA or ~/.jitagent)")
    p.add_argument("--bank", type=without_password("put it in PGPASSWORD or ~/.pgpass"),
                   help="bank file, or postgresql://USER@HOST:PORT/DB for a bank a fleet shares "
                        "(default: DATA_DIR/bank.db)")
    if old_path:
        p.add_argument("--path", dest="bank", default=HIDDEN, help=HIDDEN)  # no default of its own
    return p


def without_password(hint: str):
    """An argparse type: a URL that carries no password (argv shows in /proc to every process)."""
    def check(value: str) -> str:
        if "://" in value and urlsplit(value).password is not None:
            raise argparse.ArgumentTypeError(f"a password in argv shows in /proc to every process; {hint}")
        return value
    return check


def task_options(*, checks: bool) -> argparse.ArgumentParser:
    """The task's text (an argument, `-` for stdin, or --file) and type; with `checks`, what verifies it:
    --expect or --verifier (without, nothing does)."""
    p = parent_parser()
    p.add_argument("text", nargs="?", help="the task; - reads it from stdin")
    p.add_argument("--file", type=Path, metavar="FILE", help="read the task's text from this file instead")
    p.add_argument("--type", help="task type (decides the cluster)")
    if checks:
        group = p.add_mutually_exclusive_group()
        group.add_argument("--expect", metavar="ANSWER",
                           help="the right answer: a number is compared numerically, anything else exactly")
        group.add_argument("--verifier", metavar="JSON",
                           help='any verifier as JSON, e.g. \'{"kind": "regex", "pattern": "^4"}\'')
    else:
        p.set_defaults(expect=None, verifier=None)
    return p


def task_text(args) -> str:
    """The task's text from the argument, stdin (`-`) or --file; Failure (usage) when not exactly one."""
    if (args.text is None) == (args.file is None):
        raise Failure("give the task as an argument, - to read it from stdin, or --file FILE", USAGE)
    if args.file is not None:
        try:
            return args.file.read_text().rstrip("\n")  # a file's last line ends in one; the task does not
        except (OSError, UnicodeDecodeError) as exc:
            raise Failure(f"--file {args.file}: {getattr(exc, 'strerror', None) or exc}", USAGE) from None
    return sys.stdin.read().rstrip("\n") if args.text == "-" else args.text


def task_from_args(args):
    """The task `task_options` describe; Failure (usage) names what is wrong."""
    from jitagent.common.safe_loading import NestingError, json_loads
    from jitagent.tasks.task import task_for

    try:
        verifier = None if args.verifier is None else json_loads(args.verifier)
    except (ValueError, NestingError) as exc:
        raise Failure(f"--verifier: not a JSON object: {exc}", USAGE) from None
    try:
        return task_for(task_text(args), type=args.type, expect=args.expect, verifier=verifier)
    except ValueError as exc:
        raise Failure(str(exc), USAGE) from None


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


def config_options(parser: argparse.ArgumentParser, model: type, prefix: str = "") -> None:
    """An option per numeric field of the pydantic config `model` (`--learning-rate` for `learning_rate`,
    `--train-learning-rate` with the prefix `train`): its range, default and help are the field's, so the
    command line and the config cannot disagree. `config_from(args, model, prefix)` builds the config."""
    path = f"{model.__module__}:{model.__name__}"
    for name, info in model.model_fields.items():
        if info.annotation in (int, float):
            flag = "--" + "-".join(filter(None, (prefix, name.replace("_", "-"))))
            parser.add_argument(flag, type=FieldRange(path, name), default=info.default,
                                help=info.description)


def config_from(args: argparse.Namespace, model: type, prefix: str = ""):
    """The config `model` from the options `config_options` added with `prefix`."""
    dest = (prefix + "_") if prefix else ""
    return model(**{name: getattr(args, dest + name) for name in model.model_fields
                    if hasattr(args, dest + name)})


class RangeHelp(argparse.HelpFormatter):
    """Help that says each numeric option's range, from its type (the rule that checks it), and its
    default where the help does not say it (a number or a word; not a switch's False)."""

    def _get_help_string(self, action) -> str:
        text = action.help or ""
        if text == HIDDEN:
            return text
        notes = [rule] if (rule := getattr(action.type, "rule", None)) else []
        default = action.default
        if (isinstance(default, (int, float, str)) and not isinstance(default, bool) and default != HIDDEN
                and "default" not in text):
            notes.append(f"default: {default}")
        return f"{text} ({'; '.join(notes)})" if notes else text


def top_k(value: str) -> int | None:
    """An argparse type: 'all' → None; 'top:K' → K."""
    if value == "all":
        return None
    if value.startswith("top:") and value[4:].isdigit() and int(value[4:]) > 0:
        return int(value[4:])
    raise argparse.ArgumentTypeError(f"expected 'all' or 'top:K' with K > 0, got {value!r}")


def bank_location(args) -> str | Path:
    """The bank a command works on: `--bank`, else DATA_DIR/bank.db."""
    from jitagent.config import paths

    return paths.bank_location(args.bank, args.data_dir)


def api_key(args) -> str | None:
    """The API key for OpenAI-compatible endpoints, from a file or $JITAGENT_API_KEY (never argv)."""
    from jitagent.models import API_KEY_ENV

    return secret_from(args.api_key, args.api_key_file, "--api-key", API_KEY_ENV)


def secret_from(flag: str | None, file: Path | None, what: str, env: str) -> str | None:
    """A secret from a file or the environment, never from argv: any process that can read
    /proc/PID/cmdline would read it there. Failure (usage) for the argv flag or a bad file."""
    import os

    if flag is not None:
        raise Failure(f"{what} puts the secret in argv, where /proc shows it to every process; "
                      f"use {what}-file FILE or the {env} environment variable", USAGE)
    if file is None:
        return os.environ.get(env) or None
    try:
        secret = file.read_text().strip()
    except OSError as exc:
        raise Failure(f"{what}-file {file}: {exc.strerror}", USAGE) from None
    if not secret:
        raise Failure(f"{what}-file {file}: empty", USAGE)
    return secret


def console(stderr: bool = False) -> TerminalConsole:
    """A console for what a command prints: on a terminal, its width (cells fold, ids stay whole); piped,
    wide enough that no line wraps, so a table's rows stay one line each and no word is cut."""
    stream = sys.stderr if stderr else sys.stdout
    return TerminalConsole(stderr=stderr, width=None if stream.isatty() else 100_000)


def table(*columns: str, **kw) -> Table:
    """A rich table whose cells wrap (fold) rather than cut on a terminal: ids stay whole at any width."""
    t = Table(**kw)
    for column in columns:
        t.add_column(column, overflow="fold")
    return t


def say(message: str) -> None:
    print(visible(message), file=sys.stderr)
