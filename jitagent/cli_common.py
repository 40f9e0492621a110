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
import sys
from pathlib import Path
from urllib.parse import urlsplit

from rich.table import Table

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
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", Subcommands)

    def error(self, message: str):
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
    p = parent_parser()
    if meta:
        p.add_argument("--meta-model", default=META_MODEL,
                       help="writes harnesses: embedded | qwen2.5-coder-0.5b | smollm2-135m | "
                       f"http(s)://HOST:PORT[#model] (OpenAI-compatible) (default: {META_MODEL})")
    if solver:
        p.add_argument("--solver-model", default=None if meta else META_MODEL,
                       help="runs them, same choices (default: the meta-model"
                       + (")" if meta else f", {META_MODEL})"))
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
    """The task's text and type; with `checks`, what verifies it: --expect or --verifier (without,
    nothing does)."""
    p = parent_parser()
    p.add_argument("text", help="the task")
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


def task_from_args(args):
    """The task `task_options` describe; Failure (usage) names what is wrong."""
    from jitagent.nesting import NestingError, json_loads
    from jitagent.tasks import task_for

    try:
        verifier = None if args.verifier is None else json_loads(args.verifier)
    except (ValueError, NestingError) as exc:
        raise Failure(f"--verifier: not a JSON object: {exc}", USAGE) from None
    try:
        return task_for(args.text, type=args.type, expect=args.expect, verifier=verifier)
    except ValueError as exc:
        raise Failure(str(exc), USAGE) from None


def top_k(value: str) -> int | None:
    """An argparse type: 'all' → None; 'top:K' → K."""
    if value == "all":
        return None
    if value.startswith("top:") and value[4:].isdigit() and int(value[4:]) > 0:
        return int(value[4:])
    raise argparse.ArgumentTypeError(f"expected 'all' or 'top:K' with K > 0, got {value!r}")


def bank_location(args) -> str | Path:
    """The bank a command works on: `--bank`, else DATA_DIR/bank.db."""
    from jitagent import paths

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


def table(*columns: str, **kw) -> Table:
    """A rich table whose cells wrap (fold) rather than cut: ids stay whole at any width."""
    t = Table(**kw)
    for column in columns:
        t.add_column(column, overflow="fold")
    return t


def say(message: str) -> None:
    print(message, file=sys.stderr)
