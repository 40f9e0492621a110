"""Options whose value may also come from the environment (JITAGENT_*) and, for `serve`, an optional
TOML file (`--config jitagent.toml`): the command line wins, then the environment, then the file, then
the option's default.

Each such option is a `Setting`, listed once; its flag, its variable and its key in the file (the flag
without its dashes) all come from it. Until `resolve` runs, an option the command line left out holds
its Setting, so `resolve` needs no list of the command's settings: `main` calls it once, for any command.
"""

from __future__ import annotations

import argparse
import pkgutil
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jitagent.cli.common import (
    META_MODEL,
    USAGE,
    Failure,
    FieldRange,
    OutOfRange,
    without_password,
)
from jitagent.config.logs import FORMATS
from jitagent.models import MODEL_CHOICES


def log_format(value: str) -> str:
    if value not in FORMATS:
        raise ValueError(" or ".join(FORMATS))
    return value


@dataclass(frozen=True)
class FieldDefault:
    """A setting's default that is a config model's field's default (`module:Model`, `field`): one source,
    the model's, read when help is shown or the setting resolved (not imported on every start)."""
    model: str
    field: str

    def value(self) -> Any:
        return pkgutil.resolve_name(self.model).model_fields[self.field].default


@dataclass(frozen=True)
class Setting:
    """An option that may also come from the environment (and serve's --config file)."""
    flag: str
    default: Any
    parse: Callable[[str], Any] | None  # None: a switch (true/false)
    help: str  # with {default} and {variable} where it names them; else they are appended
    env: str | None = None  # default: JITAGENT_ + the flag in capitals
    argv_type: Callable[[str], Any] | None = None  # a stricter check for the command line (default: parse)
    metavar: str | None = None

    @property
    def dest(self) -> str:
        return self.flag.removeprefix("--").replace("-", "_")

    @property
    def variable(self) -> str:
        return self.env or "JITAGENT_" + self.dest.upper()

    @property
    def value(self) -> Any:
        """The default itself: a config model's field's, where it is one."""
        return self.default.value() if isinstance(self.default, FieldDefault) else self.default

    def describe(self) -> str:
        if "{" in self.help:
            return self.help.format(default=self.value, variable=self.variable)
        default = f" (default: {self.value})" if self.value not in (None, False) else ""
        return f"{self.help}{default}; env {self.variable}"


def from_field(flag: str, model: str, field: str, help: str, **kw) -> Setting:
    """The setting of a config model's numeric field: its default and its range are the field's."""
    return Setting(flag, FieldDefault(model, field), FieldRange(model, field), help, **kw)


LOG_FORMAT = Setting("--log-format", "json", log_format, "json | text")
SERVER = "jitagent.doors.server:ServerConfig"
PORT = FieldRange(SERVER, "port")
# every command that synthesizes takes it, and JITAGENT_N, from SynthesisConfig
N = from_field("--n", "jitagent.improvement.synthesis.synthesize:SynthesisConfig", "n",
               "candidates per synthesis")
SERVE = (
    Setting("--host", "127.0.0.1", str, "address to listen on"),
    from_field("--port", SERVER, "port", "port to listen on (0: any free port)"),
    Setting("--data-dir", None, Path, "the bank's folder: DIR/bank.db (default: ~/.jitagent)",
            env="JITAGENT_DATA"),
    Setting("--bank", None, str, "bank file, or postgresql://USER@HOST:PORT/DB shared by a fleet",
            argv_type=without_password("put it in PGPASSWORD or ~/.pgpass")),
    Setting("--meta-model", META_MODEL, str, f"writes harnesses: {MODEL_CHOICES}"),
    Setting("--solver-model", None, str, "runs them, same choices (default: the meta-model)"),
    Setting("--api-key-file", None, Path,
            "a file holding the model endpoint's API key (or JITAGENT_API_KEY)"),
    from_field("--concurrency", SERVER, "concurrency", "tasks synthesized or executed at once"),
    from_field("--max-queue", SERVER, "max_queue", "tasks waiting beyond which calls get RESOURCE_EXHAUSTED"),
    from_field("--max-concurrent", SERVER, "max_concurrent",
               "solves open at once (Solve, Synthesize, task streams); past it calls get RESOURCE_EXHAUSTED"),
    N,
    Setting("--no-dry-run", False, None, "skip synthesis's dry runs"),
    Setting("--auth-token-file", None, Path,
            "a file holding the bearer token clients must send (or JITAGENT_AUTH_TOKEN)"),
    Setting("--tls-cert", None, Path, "PEM certificate (with --tls-key: TLS)"),
    Setting("--tls-key", None, Path, "PEM private key"),
    Setting("--metrics-port", None, PORT, "serve Prometheus metrics on this port"),
    Setting("--grace", FieldDefault(SERVER, "grace_s"), FieldRange(SERVER, "grace_s"),
            "seconds in-flight calls get on SIGTERM"),
    Setting("--openai-port", None, PORT, "also serve the OpenAI-compatible HTTP API (/v1/chat/completions) "
            "on this port, on the same pipeline"),
    from_field("--retrain-every", "jitagent.improvement.retrain:RetrainConfig", "every",
               "train the solver's adapter again in the background after this many verified runs (0: never)"),
    LOG_FORMAT,
)
NAMES = {int: "an integer", float: "a number", str: "text", Path: "a path"}
SWITCH_WORDS = {"1": True, "true": True, "yes": True, "on": True,
                "0": False, "false": False, "no": False, "off": False}


def add_arguments(parser: argparse.ArgumentParser, settings: Sequence[Setting], config: bool = False) -> None:
    """The settings' flags, each holding its Setting until `resolve`; with `config`, `--config FILE`."""
    for s in settings:
        extra = {"action": "store_true"} if s.parse is None else {"type": s.argv_type or s.parse,
                                                                  "metavar": s.metavar}
        parser.add_argument(s.flag, default=s, help=s.describe(), **extra)
    if config:
        parser.add_argument("--config", type=lambda path: ConfigFile(Path(path), tuple(settings)),
                            metavar="FILE",
                            help="a TOML file of these settings (keys: the flags without dashes)")


def resolve(args: argparse.Namespace, environ: Mapping[str, str]) -> None:
    """Every setting the command line left out (it still holds its Setting) from the environment, then
    the --config file, then its default. Failure (usage) names a value that does not parse and where it
    came from."""
    config = vars(args).get("config")
    values = config.values() if config else {}
    for dest, s in list(vars(args).items()):
        if not isinstance(s, Setting):
            continue
        if s.variable in environ:
            value = _parse(s, environ[s.variable], s.variable)
        elif s.dest in values:
            value = _parse(s, values[s.dest], f"{config.path}: {s.flag.removeprefix('--')}")
        else:
            value = s.value
        setattr(args, dest, value)


@dataclass(frozen=True)
class ConfigFile:
    """`--config FILE`: the TOML file of `settings`, read when the settings are resolved."""
    path: Path
    settings: tuple[Setting, ...]

    def values(self) -> dict[str, Any]:
        try:
            raw = tomllib.loads(self.path.read_text())
        except OSError as exc:
            raise Failure(f"--config {self.path}: {exc.strerror}", USAGE) from None
        except tomllib.TOMLDecodeError as exc:
            raise Failure(f"--config {self.path}: not TOML: {exc}", USAGE) from None
        values = {key.replace("-", "_"): value for key, value in raw.items()}
        if unknown := sorted(set(values) - {s.dest for s in self.settings}):
            raise Failure(f"--config {self.path}: unknown setting(s) {', '.join(unknown)}; known: "
                          f"{', '.join(s.flag.removeprefix('--') for s in self.settings)}", USAGE)
        return values


def _parse(setting: Setting, value: Any, source: str) -> Any:
    if setting.parse is None:
        if isinstance(value, bool):
            return value
        if str(value).strip().lower() in SWITCH_WORDS:
            return SWITCH_WORDS[str(value).strip().lower()]
        raise Failure(f"{source}: expected true or false, got {value!r}", USAGE)
    expected = NAMES.get(setting.parse) or getattr(setting.parse, "name", None)  # a ranged number: its kind
    if isinstance(value, (bool, dict, list)):
        raise Failure(f"{source}: expected {expected or 'text'}, got {value!r}", USAGE)
    try:
        return setting.parse(value if setting.parse is float else str(value))
    except OutOfRange as exc:
        raise Failure(f"{source}: {exc}", USAGE) from None
    except ValueError as exc:
        raise Failure(f"{source}: expected {expected or exc}, got {value!r}", USAGE) from None
