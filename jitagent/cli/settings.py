"""Options whose value may also come from the environment (JITAGENT_*) and, for the commands that serve
(`serve`, `worker`, `mcp`), an optional TOML file (`--config jitagent.toml`): the command line wins, then
the environment, then the file, then the option's default.

Each such option is a `Setting`, defined once here; its flag, its variable and its key in the file (the
flag without its dashes) all come from it, and a config model's field gives its own (`field_setting`: the
default, the range or type, the help are the field's). Until `resolve` runs, an option the command line left
out holds its Setting, so `resolve` needs no list of the command's settings: `main` calls it once, for any
command.
"""

from __future__ import annotations

import argparse
import pkgutil
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jitagent.cli import options
from jitagent.cli.options import USAGE, Failure, FieldRange, OutOfRange, without_password
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
    refused: str | None = None  # a secret's spelling in argv, taken only to be refused (secret_from)

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


def field_setting(model: str, field: str, flag: str | None = None, **kw) -> Setting:
    """The setting of the config model `model`'s (`module:Model`) field: its flag the field's name, dashed
    (unless `flag`), its default the field's, a number checked against the field's range (else parsed as the
    field's type), its help the field's description. One source: the model's."""
    info = pkgutil.resolve_name(model).model_fields[field]
    kinds = [t for t in (int, float, Path, str) if info.annotation in (t, t | None)]
    parse = FieldRange(model, field) if kinds and kinds[0] in (int, float) else (kinds or [str])[0]
    return Setting(flag or "--" + field.replace("_", "-"), FieldDefault(model, field), parse,
                   kw.pop("help", info.description), **kw)


def switch_setting(model: str, field: str) -> Setting:
    """The switch (`--allow-unconfined`) of the config model's boolean field, its help the field's."""
    info = pkgutil.resolve_name(model).model_fields[field]
    return Setting("--" + field.replace("_", "-"), FieldDefault(model, field), None, info.description)


LOG_FORMAT = Setting("--log-format", "json", log_format, "json | text")
SERVER = "jitagent.doors.server:ServerConfig"
SYNTHESIS = "jitagent.improvement.synthesis.synthesize:SynthesisConfig"
PORT = FieldRange(SERVER, "port")
# The options every command with models or a bank takes, each once: its variable works for all of them.
META_MODEL = Setting("--meta-model", options.META_MODEL, str, f"writes harnesses: {MODEL_CHOICES}")
SOLVER_MODEL = Setting("--solver-model", None, str, f"runs the harnesses: {MODEL_CHOICES} (default: the "
                       f"meta-model, or {options.META_MODEL} where a command writes none)")
API_KEY_FILE = Setting("--api-key-file", None, Path, "a file holding the API key of an OpenAI-compatible "
                       "endpoint (or JITAGENT_API_KEY)", metavar="FILE", refused="--api-key")
BANK = (
    Setting("--data-dir", None, Path, "the bank's folder: DIR/bank.db (default: ~/.jitagent)",
            env="JITAGENT_DATA", metavar="DIR"),
    Setting("--bank", None, str, "bank file, or postgresql://USER@HOST:PORT/DB shared by a fleet "
            "(default: DIR/bank.db)", argv_type=without_password("put it in PGPASSWORD or ~/.pgpass")),
)
MODELS = (META_MODEL, SOLVER_MODEL, API_KEY_FILE)
# every command that synthesizes takes these, from SynthesisConfig
N = field_setting(SYNTHESIS, "n", help="candidates per synthesis")
NO_DRY_RUN = Setting("--no-dry-run", False, None, "skip running each candidate one step on the task before "
                     "choosing (synthesis's dry runs)")
SYNTHESIZING = (N, NO_DRY_RUN)
# how much a serving process takes on at once (the solving layer's admission)
ADMISSION = tuple(field_setting(SERVER, name) for name in ("concurrency", "max_queue", "max_concurrent"))
# what work in progress gets on SIGTERM, a server's calls or a worker's tasks (their configs' `grace_s`)
GRACE = field_setting(SERVER, "grace_s", "--grace", help="seconds work in progress gets on SIGTERM")
# who may call a serving process, and as whom (jitagent.solving.access)
TOKENS_FILE = field_setting(SERVER, "tokens_file", metavar="FILE")
ACCESS = (Setting("--auth-token-file", None, Path, "a file holding the bearer token clients must send (or "
                  "JITAGENT_AUTH_TOKEN); its holder is the operator", refused="--auth-token"),
          TOKENS_FILE)
SERVE = (
    *(field_setting(SERVER, name) for name in ("host", "port")),
    switch_setting(SERVER, "allow_unconfined"),
    *BANK, *MODELS,
    *ADMISSION,
    *SYNTHESIZING,
    *ACCESS,
    *(field_setting(SERVER, name) for name in ("tls_cert", "tls_key", "metrics_port")),
    GRACE,
    field_setting(SERVER, "openai_port"),
    field_setting("jitagent.improvement.retrain:RetrainConfig", "every", "--retrain-every",
                  help="train the solver's adapter again in the background after this many verified runs "
                       "(0: never)"),
    field_setting("jitagent.improvement.practice:PracticeConfig", "tries", "--practice",
                  help="on a failure a client reports with its check, try the task again in the background "
                       "with up to this many other arms, keeping what passes as examples (0: never)"),
    LOG_FORMAT,
)
WORKER = "jitagent.doors.worker:WorkerConfig"
WORK = (  # beside the bank and the models (cli.common's bank() and models())
    field_setting(WORKER, "slots"),
    field_setting(WORKER, "claim_idle_s", "--claim-idle"),
    field_setting(WORKER, "max_deliveries"),
    field_setting(WORKER, "task_timeout_s", "--task-timeout"),
    switch_setting(WORKER, "allow_unconfined"),
    TOKENS_FILE,  # with it, an entry runs as the tenant of the token it carries
    GRACE,
    *SYNTHESIZING, LOG_FORMAT,
)
MCP = (  # beside the bank and the models
    Setting("--http-port", None, PORT, "serve streamable HTTP at http://HOST:PORT/mcp instead of stdio"),
    field_setting(SERVER, "host", help="the address --http-port listens on"),
    *ACCESS, *ADMISSION, *SYNTHESIZING, switch_setting(SERVER, "allow_unconfined"),
)
# one config file for every command that serves: each takes the keys it knows and leaves the others'
SERVING = {s.dest for group in (SERVE, WORK, MCP, BANK, MODELS) for s in group}
def fields_of(args: argparse.Namespace, chosen: Sequence[Setting], model: str) -> dict[str, Any]:
    """The values of the `chosen` settings made from `model`'s fields, by field name: a config built from
    them needs no line per setting."""
    return {s.default.field: getattr(args, s.dest) for s in chosen
            if isinstance(s.default, FieldDefault) and s.default.model == model}


NAMES = {int: "an integer", float: "a number", str: "text", Path: "a path"}
SWITCH_WORDS = {"1": True, "true": True, "yes": True, "on": True,
                "0": False, "false": False, "no": False, "off": False}


def add_arguments(parser: argparse.ArgumentParser, settings: Sequence[Setting], config: bool = False) -> None:
    """The settings' flags, each holding its Setting until `resolve`; with `config`, `--config FILE`."""
    for s in settings:
        extra = {"action": "store_true"} if s.parse is None else {"type": s.argv_type or s.parse,
                                                                  "metavar": s.metavar}
        parser.add_argument(s.flag, default=s, help=s.describe(), **extra)
        if s.refused:
            parser.add_argument(s.refused, help=options.HIDDEN)
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
    """`--config FILE`: the TOML file of the serving commands' settings (`settings`: this command's), read
    when the settings are resolved."""
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
        if unknown := sorted(set(values) - SERVING):  # another serving command's keys are its own to read
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
