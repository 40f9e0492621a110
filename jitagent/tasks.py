"""Tasks and task suites (JSONL, one task per line)."""

from __future__ import annotations

import json
from collections import defaultdict
from importlib import resources
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from jitagent.spec import TOOL_NAMES, format_validation_error

SPLITS = ("learn", "score", "final")


class VerifierSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["none", "exact", "numeric", "regex", "python_tests", "shell_check", "reasoning_gym"]
    expected: str | float | int | None = None
    tolerance: float = 1e-6
    pattern: str | None = None
    tests: str | None = None       # python_tests: code run after the answer's code
    prelude: str | None = None     # python_tests: code run before the answer's code (e.g. imports)
    dataset: str | None = None     # reasoning_gym: generator name, seed, size and index of the entry
    seed: int | None = None
    size: int | None = None
    index: int | None = None
    command: str | None = None     # shell_check: run in the workspace after the agent finishes
    case_sensitive: bool = False


class Task(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(..., min_length=1)
    prompt: str = Field(..., min_length=1)
    type: str | None = None
    tags: list[str] = Field(default_factory=list)
    split: Literal["learn", "score", "final"] | None = None
    tools: list[str] | None = Field(None, description="tools the task allows; None: all")
    files: dict[str, str] = Field(default_factory=dict, description="workspace files before the run")
    public_tests: str | None = Field(None, description="checks the agent may run (verify: run_tests)")
    verifier: VerifierSpec = Field(default_factory=lambda: VerifierSpec(kind="none"),
                                   description="kind 'none': unverified (reward comes later, as feedback)")

    @field_validator("tools")
    @classmethod
    def _known_tools(cls, tools):
        if tools is not None and (unknown := [t for t in tools if t not in TOOL_NAMES]):
            raise ValueError(f"unknown tool(s) {unknown}")
        return tools

    def allows(self, tool: str) -> bool:
        return self.tools is None or tool in self.tools


class TaskFileError(ValueError):
    """A task file that does not parse; the message names the file, the line and the field."""


def parse_tasks(lines: list[str], source: str = "<tasks>") -> list[Task]:
    tasks, seen = [], set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            task = Task.model_validate(json.loads(line))
        except json.JSONDecodeError as exc:
            raise TaskFileError(f"{source}:{number}: not valid JSON: {exc.msg}") from None
        except ValidationError as exc:
            raise TaskFileError(f"{source}:{number}: {format_validation_error(exc)}") from None
        if task.id in seen:
            raise TaskFileError(f"{source}:{number}: duplicate task id {task.id!r}")
        seen.add(task.id)
        tasks.append(task)
    return tasks


def builtin_suites() -> dict[str, Path]:
    root = resources.files("jitagent.suites")
    return {p.name.removesuffix(".jsonl"): Path(str(p)) for p in root.iterdir() if p.name.endswith(".jsonl")}


def suite_names() -> list[str]:
    from jitagent.suites.external import GENERATED

    return sorted([*builtin_suites(), *GENERATED])


def load_suite(name_or_path: str, split: str | None = None) -> list[Task]:
    from jitagent.suites.external import GENERATED

    suites = builtin_suites()
    if name_or_path in GENERATED:
        tasks = GENERATED[name_or_path]()
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
