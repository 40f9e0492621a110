"""`jitagent serve`'s settings from the command line, the environment (JITAGENT_*) and an optional
TOML file (`--config jitagent.toml`), in that order of precedence, then the built-in defaults.

One table lists each setting once; the flags, the environment variables and the file's keys (the
flag without its dashes) all come from it.
"""

from __future__ import annotations

import argparse
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jitagent.cli_common import USAGE, Failure, without_password
from jitagent.logs import FORMATS


def log_format(value: str) -> str:
    if value not in FORMATS:
        raise ValueError(" or ".join(FORMATS))
    return value


@dataclass(frozen=True)
class Setting:
    flag: str
    default: Any
    parse: Callable[[str], Any] | None  # None: a switch (true/false)
    help: str
    env: str | None = None  # default: JITAGENT_ + the flag in capitals
    argv_type: Callable[[str], Any] | None = None  # a stricter check for the command line (default: parse)

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")

    @property
    def variable(self) -> str:
        return self.env or "JITAGENT_" + self.dest.upper()


SERVE = (
    Setting("--host", "127.0.0.1", str, "address to listen on"),
    Setting("--port", 50051, int, "port to listen on"),
    Setting(
        "--data-dir", None, Path, "the bank's folder: DIR/bank.db (default: ~/.jitagent)", env="JITAGENT_DATA"
    ),
    Setting(
        "--bank",
        None,
        str,
        "bank file, or postgresql://USER@HOST:PORT/DB shared by a fleet",
        argv_type=without_password("put it in PGPASSWORD or ~/.pgpass"),
    ),
    Setting(
        "--meta-model", "embedded", str, "writes harnesses: embedded | model name | OpenAI-compatible URL"
    ),
    Setting("--solver-model", None, str, "runs them (default: the meta-model)"),
    Setting(
        "--api-key-file", None, Path, "a file holding the model endpoint's API key (or JITAGENT_API_KEY)"
    ),
    Setting("--concurrency", 1, int, "tasks synthesized or executed at once"),
    Setting("--max-queue", 64, int, "tasks waiting beyond which calls get RESOURCE_EXHAUSTED"),
    Setting("--max-concurrent", 128, int,
            "solves open at once (Solve, Synthesize, task streams); past it calls get RESOURCE_EXHAUSTED"),
    Setting("--n", 3, int, "default candidates per synthesis"),
    Setting("--no-dry-run", False, None, "skip synthesis's dry runs"),
    Setting(
        "--auth-token-file",
        None,
        Path,
        "a file holding the bearer token clients must send (or JITAGENT_AUTH_TOKEN)",
    ),
    Setting("--tls-cert", None, Path, "PEM certificate (with --tls-key: TLS)"),
    Setting("--tls-key", None, Path, "PEM private key"),
    Setting("--metrics-port", None, int, "serve Prometheus metrics on this port"),
    Setting("--grace", 10.0, float, "seconds in-flight calls get on SIGTERM"),
    Setting("--log-format", "json", log_format, "json | text"),
)
NAMES = {int: "an integer", float: "a number", str: "text", Path: "a path"}
SWITCH_WORDS = {
    "1": True,
    "true": True,
    "yes": True,
    "on": True,
    "0": False,
    "false": False,
    "no": False,
    "off": False,
}


def add_arguments(parser: argparse.ArgumentParser, settings=SERVE) -> None:
    for s in settings:
        extra = {"action": "store_true"} if s.parse is None else {"type": s.argv_type or s.parse}
        default = f" (default: {s.default})" if s.default not in (None, False) else ""
        parser.add_argument(
            s.flag, default=argparse.SUPPRESS, help=f"{s.help}{default}; env {s.variable}", **extra
        )
    parser.add_argument(
        "--config",
        type=Path,
        default=argparse.SUPPRESS,
        metavar="FILE",
        help="a TOML file of these settings (keys: the flags without dashes)",
    )


def resolve(args: argparse.Namespace, environ: dict[str, str], settings=SERVE) -> None:
    """Fill every setting not given on the command line from the environment, then the config file,
    then its default. Failure (usage) names a value that does not parse and where it came from."""
    config = _config(getattr(args, "config", None), settings)
    for s in settings:
        if hasattr(args, s.dest):
            continue
        if s.variable in environ:
            value = _parse(s, environ[s.variable], s.variable)
        elif s.dest in config:
            value = _parse(s, config[s.dest], f"{args.config}: {s.flag.removeprefix('--')}")
        else:
            value = s.default
        setattr(args, s.dest, value)


def _config(path: Path | None, settings) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        raw = tomllib.loads(path.read_text())
    except OSError as exc:
        raise Failure(f"--config {path}: {exc.strerror}", USAGE) from None
    except tomllib.TOMLDecodeError as exc:
        raise Failure(f"--config {path}: not TOML: {exc}", USAGE) from None
    known = {s.dest for s in settings}
    values = {key.replace("-", "_"): value for key, value in raw.items()}
    if unknown := sorted(set(values) - known):
        raise Failure(
            f"--config {path}: unknown setting(s) {', '.join(unknown)}; known: "
            f"{', '.join(s.flag.removeprefix('--') for s in settings)}",
            USAGE,
        )
    return values


def _parse(setting: Setting, value: Any, source: str) -> Any:
    if setting.parse is None:
        if isinstance(value, bool):
            return value
        if str(value).strip().lower() in SWITCH_WORDS:
            return SWITCH_WORDS[str(value).strip().lower()]
        raise Failure(f"{source}: expected true or false, got {value!r}", USAGE)
    expected = NAMES.get(setting.parse)
    if isinstance(value, (bool, dict, list)):
        raise Failure(f"{source}: expected {expected or 'text'}, got {value!r}", USAGE)
    try:
        return setting.parse(value if setting.parse is float else str(value))
    except ValueError as exc:
        raise Failure(f"{source}: expected {expected or exc}, got {value!r}", USAGE) from None
