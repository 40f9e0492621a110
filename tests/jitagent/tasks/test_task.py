"""Tasks from files and requests: bad names, numbers and nesting are refused naming the field."""

import json

import pytest
from pydantic import ValidationError

from jitagent.tasks.task import MAX_PATTERN, Task, TaskFileError, parse_tasks


@pytest.mark.parametrize("name, problem", [
    ("../../etc/passwd", "normalised"), ("/etc/passwd", "relative"), ("", "empty"), (".", "normalised"),
    ("a//b", "normalised"), ("a/./b", "normalised"), ("a\0b", "NUL"), ("x" * 300, "longer than 255 bytes"),
    ("y/" * 600, "longer than 1024"),
])
def test_file_names_must_be_relative_normalised_and_bounded(name, problem):
    with pytest.raises(ValidationError, match=problem) as err:
        Task(id="t", prompt="p", files={name: "x"})
    assert err.value.errors()[0]["loc"] == ("files",)


def test_a_file_cannot_also_be_a_directory():
    with pytest.raises(ValidationError, match="'a' is a file, not a directory"):
        Task(id="t", prompt="p", files={"a": "1", "a/b": "2"})
    assert Task(id="t", prompt="p", files={"a/b": "1", "a/c": "2", "logs/x.log": ""}).files


@pytest.mark.parametrize("verifier, field", [
    ({"kind": "numeric", "expected": 1, "tolerance": float("nan")}, "tolerance"),
    ({"kind": "numeric", "expected": float("inf")}, "expected"),
    ({"kind": "numeric", "expected": 1, "tolerance": -1}, "tolerance"),
    ({"kind": "regex", "pattern": "a" * (MAX_PATTERN + 1)}, "pattern"),
])
def test_non_finite_numbers_and_huge_patterns_are_refused(verifier, field):
    with pytest.raises(ValidationError, match=field):
        Task(id="t", prompt="p", verifier=verifier)


def test_a_deeply_nested_task_line_is_a_task_file_error():
    line = json.dumps({"id": "t", "prompt": "p"})[:-1] + ', "tags": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(TaskFileError, match="tasks.jsonl:1: not a task: nested deeper"):
        parse_tasks([line], "tasks.jsonl")
