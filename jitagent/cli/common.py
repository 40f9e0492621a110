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

from rich.table import Table

from jitagent.cli import settings
from jitagent.cli.options import HIDDEN, SECONDS, USAGE, Failure, FieldRange, RangeHelp
from jitagent.cli.terminal import TerminalConsole, visible

TOKEN_ENV = "JITAGENT_AUTH_TOKEN"  # the one bearer token, a server's and its clients'


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
    """`--meta-model` / `--solver-model` and `--api-key-file` (cli.settings: each also from its JITAGENT_*
    variable and a --config file); `old_model`: the dest the old `--model` spelling meant here. Without
    `meta`, the solver runs the meta-model's default (`solver_model`)."""
    p = parent_parser()
    chosen = ((settings.META_MODEL, meta), (settings.SOLVER_MODEL, solver), (settings.API_KEY_FILE, True))
    settings.add_arguments(p, [s for s, wanted in chosen if wanted])
    if old_model:
        p.add_argument("--model", dest=old_model, default=HIDDEN, help=HIDDEN)  # no default of its own
    return p


def solver_model(args) -> str:
    """The model that runs the harnesses: --solver-model, else the meta-model (its default where a command
    takes no meta-model)."""
    return args.solver_model or getattr(args, "meta_model", None) or settings.META_MODEL.value


def synthesis_config(args):
    """The synthesis a command's `--n` and `--no-dry-run` ask for (cli.settings.SYNTHESIZING)."""
    from jitagent.improvement.synthesis.synthesize import SynthesisConfig

    return SynthesisConfig(n=args.n, dry_run=not args.no_dry_run)


def learned_from(held_out: str) -> argparse.ArgumentParser:
    """Which verified runs are learned from or exported: `--min-reward` and `--per-cluster` (ExportConfig's
    fields), and `--held-out-suite` (`held_out`: what it leaves out, and its default)."""
    from jitagent.improvement.training.export import ExportConfig

    p = parent_parser()
    config_options(p, ExportConfig)
    p.add_argument("--held-out-suite", action="append", default=[], metavar="SUITE",
                   help=f"never learn from or export a task of this suite's final split (repeatable; "
                        f"{held_out})")
    p.add_argument("--pool", default="", metavar="POOL", type=pool_name,
                   help=ExportConfig.model_fields["pool"].description)
    return p


def pool_name(text: str) -> str:
    """A pool's (or a tenant's) name, as `--pool` takes it."""
    import re

    from harness_bank.pools import NAME

    if text and not re.fullmatch(NAME, text):
        raise argparse.ArgumentTypeError(f"{text!r} is no pool's name: 1-64 of a-z 0-9 . _ -, "
                                         f"first a-z 0-9")
    return text


def budget(what: str) -> argparse.ArgumentParser:
    """`--budget-s`: the wall-clock budget of each `what`."""
    p = parent_parser()
    p.add_argument("--budget-s", type=SECONDS, default=60.0, help=f"wall-clock budget per {what}")
    return p


def bank(*, old_path: bool = False) -> argparse.ArgumentParser:
    """`--data-dir` (the embedded bank is DIR/bank.db) and `--bank` (a file or a shared database)."""
    p = parent_parser()
    settings.add_arguments(p, settings.BANK)
    if old_path:
        p.add_argument("--path", dest="bank", default=HIDDEN, help=HIDDEN)  # no default of its own
    return p


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
        p.add_argument("--check", action="store_true",
                       help="exit 1 when the verifier fails the answer (a script can branch on it)")
    else:
        p.set_defaults(expect=None, verifier=None, check=False)
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


def result_line(result: dict) -> str:
    """A solve's one result line, the same wherever it is printed (`solve`, `client solve`): `result` is the
    flat record (`Solved`) as JSON; a harness run alone (`solve --harness`) has no run id and no route."""
    reward = "unverified" if result.get("reward") is None else f"{result['reward']:g}"
    head = "".join(f"{key}={result[key]} " for key in ("run_id", "route") if result.get(key))
    return (f"result: {head}harness={result['harness_name']} answer={result['answer']!r} "
            f"reward={reward} verdict={result['verdict'][:100]!r}"
            + (f" error={result['error'][:200]!r}" if result.get("error") else ""))
