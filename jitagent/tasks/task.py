"""Tasks and task suites (JSONL, one task per line)."""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from importlib import resources
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from jitagent.common.safe_loading import NestingError, json_loads
from jitagent.harness.spec import format_validation_error
from jitagent.sandbox.tools import TOOL_NAMES
from jitagent.tasks.suites.external import GENERATED, MAX_GYM_SIZE, STREAM_SEED, STREAMS

SPLITS = ("learn", "score", "final")
MAX_PATTERN = 4096  # a regex verifier's pattern: compiled in the server process, so bounded
MAX_FILES = 1000
MAX_FILE_PATH = 1024
MAX_NAME_BYTES = 255  # one path component, as the kernel allows
# A task's text, refused before any work when longer: past any context a served model has (the embedded
# one holds 4,096 tokens, ~16,000 characters), and bounded for what the server holds while it waits.
MAX_PROMPT_CHARS = 100_000
MAX_LABEL = 256  # a task's id, its type, each tag: names a cluster or a record, never a text
MAX_TAGS = 32


def prompt_problem(prompt: str) -> str | None:
    """Why a task's text cannot be taken (empty, or over the cap), or None."""
    if not prompt.strip():
        return "must not be empty"
    if len(prompt) > MAX_PROMPT_CHARS:
        return f"{len(prompt):,} characters; a task's text is at most {MAX_PROMPT_CHARS:,}"
    return None


class VerifierSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    kind: Literal["none", "exact", "numeric", "regex", "python_tests", "shell_check", "reasoning_gym",
                  "calls"]
    expected: str | float | int | None = None
    tolerance: float = Field(1e-6, ge=0)
    pattern: str | None = Field(None, max_length=MAX_PATTERN)
    tests: str | None = None       # python_tests: code run after the answer's code
    prelude: str | None = None     # python_tests: code run before the answer's code (e.g. imports)
    dataset: str | None = None     # reasoning_gym: generator name, seed, size and index of the entry
    seed: int | None = Field(None, ge=-2**63, le=2**63 - 1)  # the wire's int64, no bigger
    size: int | None = Field(None, ge=1, le=MAX_GYM_SIZE)  # the entries the server makes (and keeps)
    index: int | None = None
    command: str | None = None     # shell_check: run in the workspace after the agent finishes
    case_sensitive: bool = False

    @model_validator(mode="after")
    def _calls_that_can_be_matched(self):
        """A calls verifier's `expected` is the JSON list of the calls (tasks/calls.py)."""
        if self.kind == "calls":
            from jitagent.tasks.calls import expectation_problem

            if problem := expectation_problem(self.expected if isinstance(self.expected, str) else ""):
                raise ValueError(f"calls: expected: {problem}")
        return self

    @model_validator(mode="after")
    def _a_gym_entry_that_exists(self):
        """A reasoning_gym verifier names an entry its generator can make (else every answer scores 0)."""
        if self.kind != "reasoning_gym":
            return self
        if None in (self.dataset, self.seed, self.size, self.index):
            raise ValueError("reasoning_gym needs dataset, seed, size and index")
        if not 0 <= self.index < self.size:
            raise ValueError(f"reasoning_gym index must be in [0, size={self.size}), got {self.index}")
        from reasoning_gym.factory import DATASETS

        if self.dataset not in DATASETS:
            raise ValueError(f"reasoning_gym has no dataset {self.dataset!r} (e.g. "
                             f"{', '.join(sorted(DATASETS)[:5])})")
        return self


MAX_CLIENT_TOOLS = 128  # as OpenAI's chat completions take
TOOL_NAME = r"^[A-Za-z0-9_-]{1,64}$"  # OpenAI's rule for a function's name
AUTO, REQUIRED = "auto", "required"  # a task's tool_choice, or one client tool's name
SERVER_TOOL_NAMES = frozenset({*TOOL_NAMES, "final_answer"})  # no client tool may take one


class ClientTool(BaseModel):
    """A function the client holds, in OpenAI's shape: a run may call it, and pauses at the call until the
    client sends the result back (with the conversation so far, as the task's text)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=TOOL_NAME)
    description: str = ""
    parameters: dict = Field(default_factory=lambda: {"type": "object", "properties": {}},
                             description="the arguments' JSON Schema")

    @field_validator("parameters")
    @classmethod
    def _a_json_schema(cls, schema: dict) -> dict:
        from jsonschema import SchemaError, validators

        try:
            validators.validator_for(schema).check_schema(schema)
        except SchemaError as exc:
            where = "/".join(str(p) for p in exc.path)
            raise ValueError(f"not a JSON Schema{f' at {where}' if where else ''}: {exc.message}") from None
        if problem := _reference_problem(schema, schema):
            raise ValueError(problem)
        return schema


def referred(ref: str, schema: dict):
    """What a `$ref` points at within `schema` (a JSON Pointer after `#`), or None: a ref to anything
    outside it, or to nothing."""
    if not ref.startswith("#"):
        return None
    target = schema
    for step in filter(None, ref.removeprefix("#").split("/")):
        step = step.replace("~1", "/").replace("~0", "~")
        target = target.get(step) if isinstance(target, dict) else None
    return target


def _reference_problem(part, schema: dict) -> str | None:
    """Why a `$ref` in `part` of `schema` cannot be followed (only the schema's own `#/...` are: nothing is
    fetched, and one that points at nothing would fail the run, not the request), or None."""
    if isinstance(part, list):
        return next((p for item in part if (p := _reference_problem(item, schema))), None)
    if not isinstance(part, dict):
        return None
    if isinstance(ref := part.get("$ref"), str) and referred(ref, schema) is None:
        return f"$ref {ref!r}: only this schema's own definitions (#/...) are followed, and it points at none"
    return next((p for key, value in part.items() if key not in ("$ref", "const", "enum", "default",
                                                                  "examples")
                 if (p := _reference_problem(value, schema))), None)


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(..., min_length=1, max_length=MAX_LABEL)
    prompt: str = Field(..., min_length=1)
    type: str | None = Field(None, max_length=MAX_LABEL)
    tags: list[Annotated[str, Field(max_length=MAX_LABEL)]] = Field(default_factory=list, max_length=MAX_TAGS)
    split: Literal["learn", "score", "final"] | None = None
    tools: list[str] | None = Field(None, description="tools the task allows; None: all")
    files: dict[str, str] = Field(default_factory=dict, description="workspace files before the run")
    public_tests: str | None = Field(None, description="checks the agent may run (verify: run_tests)")
    verifier: VerifierSpec = Field(default_factory=lambda: VerifierSpec(kind="none"),
                                   description="kind 'none': unverified (reward comes later, as feedback)")
    client_tools: list[ClientTool] = Field(default_factory=list, max_length=MAX_CLIENT_TOOLS,
                                           description="the client's functions the run may call")
    tool_choice: str = Field(AUTO, description="auto: the harness decides; required: the reply is a call; "
                                               "a client tool's name: a call of that one")
    parallel_calls: bool = Field(True, description="False: at most one call of the client's functions a "
                                                   "reply (OpenAI's parallel_tool_calls=false)")

    @field_validator("prompt")
    @classmethod
    def _within_the_cap(cls, prompt: str) -> str:
        if problem := prompt_problem(prompt):
            raise ValueError(problem)
        return prompt

    @field_validator("tools")
    @classmethod
    def _known_tools(cls, tools):
        if tools is not None and (unknown := [t for t in tools if t not in TOOL_NAMES]):
            raise ValueError(f"unknown tool(s) {unknown}")
        return tools

    @field_validator("files")
    @classmethod
    def _workspace_names(cls, files: dict[str, str]) -> dict[str, str]:
        if len(files) > MAX_FILES:
            raise ValueError(f"{len(files)} files; at most {MAX_FILES}")
        for name in files:
            if problem := _file_name_problem(name, files):
                raise ValueError(f"file name {name[:80]!r}: {problem}")
        return files

    @model_validator(mode="after")
    def _client_tools_that_can_be_called(self):
        names = [t.name for t in self.client_tools]
        twice = {n for n in names if names.count(n) > 1}
        if clash := sorted(twice | (set(names) & SERVER_TOOL_NAMES)):
            raise ValueError(f"client_tools: {clash[0]!r} is named twice or is a server tool's name")
        if self.tool_choice not in (AUTO, REQUIRED, *names):
            raise ValueError(f"tool_choice {self.tool_choice!r}: auto, required or a client tool's name")
        if self.tool_choice != AUTO and not names:
            raise ValueError(f"tool_choice {self.tool_choice!r} needs client_tools")
        return self

    def allows(self, tool: str) -> bool:
        return self.tools is None or tool in self.tools

    @property
    def forced_calls(self) -> list[ClientTool]:
        """The client tools a reply must call one of (tool_choice required or named); [] where it need not."""
        if self.tool_choice == AUTO:
            return []
        return [t for t in self.client_tools if self.tool_choice in (REQUIRED, t.name)]


def _file_name_problem(name: str, names: dict[str, str]) -> str | None:
    """Why `name` cannot be a workspace file (relative, normalised, no NUL, bounded), or None.
    `names`: the task's other files, none of which may be a directory of this one."""
    if not name:
        return "must not be empty"
    if "\0" in name:
        return "must not contain a NUL byte"
    if len(name) > MAX_FILE_PATH:
        return f"longer than {MAX_FILE_PATH} characters"
    if name.startswith("/"):
        return "must be relative to the workspace"
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "must be normalised: no empty, '.' or '..' parts"
    if any(len(part.encode()) > MAX_NAME_BYTES for part in parts):
        return f"a part is longer than {MAX_NAME_BYTES} bytes"
    if clash := next((d for d in ("/".join(parts[:i]) for i in range(1, len(parts))) if d in names), None):
        return f"{clash!r} is a file, not a directory"
    return None


class TaskFileError(ValueError):
    """A task file that does not parse; the message names the file, the line and the field."""


def parse_tasks(lines: list[str], source: str = "<tasks>") -> list[Task]:
    tasks, seen = [], set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            task = Task.model_validate(json_loads(line))
        except json.JSONDecodeError as exc:
            raise TaskFileError(f"{source}:{number}: not valid JSON: {exc.msg}") from None
        except NestingError as exc:
            raise TaskFileError(f"{source}:{number}: not a task: {exc}") from None
        except ValidationError as exc:
            raise TaskFileError(f"{source}:{number}: {format_validation_error(exc)}") from None
        if task.id in seen:
            raise TaskFileError(f"{source}:{number}: duplicate task id {task.id!r}")
        seen.add(task.id)
        tasks.append(task)
    return tasks


def builtin_suites() -> dict[str, Path]:
    root = resources.files("jitagent.tasks.suites")
    return {p.name.removesuffix(".jsonl"): Path(str(p)) for p in root.iterdir() if p.name.endswith(".jsonl")}


def suite_names() -> list[str]:
    return sorted([*builtin_suites(), *GENERATED])


def load_suite(name_or_path: str, split: str | None = None) -> list[Task]:
    suites = builtin_suites()
    if name_or_path in GENERATED:
        tasks = [Task.model_validate(record) for record in GENERATED[name_or_path]()]
    else:
        path = suites.get(name_or_path) or Path(name_or_path)
        if not path.exists():
            raise TaskFileError(f"no suite {name_or_path!r}: not one of {suite_names()} nor a file")
        tasks = parse_tasks(path.read_text().splitlines(), str(path))
    if split is not None:
        if split not in SPLITS:
            raise TaskFileError(f"unknown split {split!r}; splits: {list(SPLITS)}")
        tasks = [t for t in tasks if t.split == split]
    return tasks


def refuse_final(tasks: list[Task], reader: str) -> None:
    """The guard every offline reader of a suite holds (the warm-up, evolve, the adapters' gate): `final` is
    held out, so a final task given to one is refused, whoever called it."""
    if held_out := [t.id for t in tasks if t.split == "final"]:
        raise ValueError(f"{reader} never reads the held-out split: {len(held_out)} final task(s), "
                         f"e.g. {held_out[0]}")


def load_stream(name_or_path: str, per_family: int, seed: int = STREAM_SEED) -> list[Task]:
    """A stream: `per_family` tasks of each family (task type) in a seeded, interleaved order. A generated
    suite makes them with the stream's own seed; another gives its `final` tasks (`learn` and `score` are
    the warm-up's and the screen's)."""
    if name_or_path in STREAMS:
        tasks = [Task.model_validate(record) for record in STREAMS[name_or_path](per_family, seed)]
    else:
        by_type: dict[str | None, list[Task]] = defaultdict(list)
        for task in load_suite(name_or_path, "final"):
            by_type[task.type].append(task)
        tasks = [task for family in by_type.values() for task in family[:per_family]]
    random.Random(seed).shuffle(tasks)
    return tasks


def spread_over_types(tasks: list[Task], limit: int | None) -> list[Task]:
    """The first `limit` tasks taken round-robin over task types, so a cut keeps every type."""
    if not limit or limit >= len(tasks):
        return tasks
    by_type: dict[str | None, list[Task]] = defaultdict(list)
    for task in tasks:
        by_type[task.type].append(task)
    queues = list(by_type.values())
    picked: list[Task] = []
    while len(picked) < limit:
        for queue in queues:
            if queue and len(picked) < limit:
                picked.append(queue.pop(0))
    return picked


Expected = str | float  # an expected answer, as every door takes it: a number is checked numerically


def verifier_for(expect: Expected | None = None,
                 verifier: dict | VerifierSpec | None = None) -> VerifierSpec:
    """The verifier a caller asks for: `expect` a number is checked numerically, anything else exactly;
    `verifier` any kind (VerifierSpec fields); neither: none (unverified). ValueError names the problem."""
    if expect is not None and verifier is not None:
        raise ValueError("give an expected answer or a verifier, not both")
    try:
        if verifier is not None:
            return verifier if isinstance(verifier, VerifierSpec) else VerifierSpec.model_validate(verifier)
        if expect is None:
            return VerifierSpec(kind="none")
        number = _finite_number(expect)
        if number is not None:
            return VerifierSpec(kind="numeric", expected=number)
        return VerifierSpec(kind="exact", expected=str(expect))
    except ValidationError as exc:
        raise ValueError(f"verifier: {format_validation_error(exc)}") from None


def _finite_number(value: str | float) -> int | float | None:
    text = str(value).strip()
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return None
    return number if number == number and abs(number) != float("inf") else None


def task_for(prompt: str, *, type: str | None = None, expect: Expected | None = None,
             verifier: dict | VerifierSpec | None = None, client_tools: list[ClientTool] = (),
             tool_choice: str = AUTO, parallel_calls: bool = True) -> Task:
    """A task from a prompt and what checks it (see verifier_for); its id derives from the prompt."""
    try:
        return Task(id=derived_id(prompt), prompt=prompt, type=type, verifier=verifier_for(expect, verifier),
                    client_tools=list(client_tools), tool_choice=tool_choice, parallel_calls=parallel_calls)
    except ValidationError as exc:
        raise ValueError(f"task: {format_validation_error(exc)}") from None


def derived_id(prompt: str) -> str:
    return "task-" + hashlib.sha256(prompt.encode()).hexdigest()[:10]
