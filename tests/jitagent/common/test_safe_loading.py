"""Untrusted JSON and YAML: nesting and size capped with a clear error, no alias bombs."""

import json

import pytest
import yaml

from jitagent.common.safe_loading import MAX_DEPTH, NestingError, check_nesting, json_loads, yaml_load


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_ordinary_documents_pass_through():
    assert json_loads('{"a": [1, {"b": 2}]}') == {"a": [1, {"b": 2}]}
    assert yaml_load("a:\n  - 1\n  - b: 2\n") == {"a": [1, {"b": 2}]}


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 5_000, 200_000])
def test_deep_json_and_yaml_are_a_nesting_error_never_a_recursion_error(depth):
    with pytest.raises(NestingError, match="nested deeper"):
        json_loads(nested(depth))
    with pytest.raises(NestingError, match="nested deeper"):
        yaml_load(nested(depth))


def test_the_cap_is_exact():
    assert check_nesting(json.loads(nested(MAX_DEPTH)))


def test_too_many_values_is_a_nesting_error():
    with pytest.raises(NestingError, match="more than"):
        json_loads(json.dumps([[0] * 1000] * 300))


def test_yaml_aliases_are_refused():
    bomb = ("a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
            "c: [*b, *b, *b, *b]\n")
    with pytest.raises(yaml.YAMLError, match="aliases are not allowed"):
        yaml_load(bomb)


def test_malformed_text_keeps_its_own_error():
    with pytest.raises(json.JSONDecodeError):
        json_loads("{nope")
