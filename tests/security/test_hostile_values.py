"""Red team, issue 27 (the partial findings): a 10,000-digit integer in a spec raised an uncaught
ValueError and a meta-model answer with a 5,000-digit integer made the task INTERNAL (Python's cap on
an integer's digits raises a ValueError that is no JSONDecodeError). Now each is a clear error, and a
model's reply holding one is no tool call."""

from __future__ import annotations

import json

import pytest

from jitagent.cli.main import main
from jitagent.common.safe_loading import NestingError, json_loads, yaml_load
from jitagent.harness.seeds import load_seeds
from jitagent.harness.spec import SpecError, parse_spec
from jitagent.improvement.synthesis.validate import Ceilings, parse_output
from jitagent.models.openai_http import SchemaIgnored, _check_schema
from jitagent.runtime.parsing import parse_json_tool
from jitagent.sandbox.tools import _coerce_args
from jitagent.tasks.task import TaskFileError, parse_tasks

HUGE = "9" * 10_000


@pytest.mark.parametrize("load", [json_loads, yaml_load])
def test_a_huge_integer_is_a_nesting_error_not_a_bare_value_error(load):
    with pytest.raises(NestingError, match="cannot be read: Exceeds the limit"):
        load(f'{{"max_steps": {HUGE}}}')


def test_a_huge_integer_in_a_spec_or_a_task_file_is_their_own_clear_error(tmp_path, capsys):
    with pytest.raises(SpecError, match="not a harness spec"):
        parse_spec(f"name: x\nlimits:\n  max_steps: {HUGE}\n")
    with pytest.raises(TaskFileError):
        parse_tasks([f'{{"id": "t", "prompt": "p", "verifier": {{"kind": "exact", "expected": {HUGE}}}}}'])
    spec = tmp_path / "huge.yaml"
    spec.write_text(f"name: x\nlimits:\n  max_steps: {HUGE}\n")
    assert main(["validate", str(spec)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot be read" in err and len(err) < 500


def test_a_meta_model_answer_with_a_huge_integer_fails_its_json_rung():
    parents = {"direct": load_seeds()["direct"]}
    checked = parse_output(json.dumps({"parent": "direct"})[:-1] + f', "max_steps": {"9" * 5000}}}',
                           parents, Ceilings())
    assert checked.spec is None and checked.checks[0].rung == "json" and not checked.checks[0].ok
    assert "cannot be read" in checked.checks[0].error


def test_a_model_reply_with_a_huge_integer_is_not_a_tool_call_and_raises_nothing():
    reply = f'{{"tool": "python", "args": {{"code": {HUGE}}}}}'
    assert parse_json_tool(reply) is None
    assert _coerce_args("python", f'{{"code": {HUGE}}}') == {"code": f'{{"code": {HUGE}}}'}
    with pytest.raises(SchemaIgnored):
        _check_schema(f'{{"choice": {HUGE}}}', {"type": "object"})
