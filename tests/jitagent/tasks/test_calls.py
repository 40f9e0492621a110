"""The calls verifier: the run's calls of the client's functions against the expected ones, BFCL's rule
(each argument one of its allowed values, "" for one that may be left out, parallel calls in any order)."""

import json

import pytest

from jitagent.tasks.calls import calls_match
from jitagent.tasks.task import VerifierSpec

WEATHER = [{"get_weather": {"city": ["Paris", "Paris, France"], "unit": ["celsius", ""]}}]


def made(*calls) -> str:
    return json.dumps([{"name": name, "arguments": args} for name, args in calls])


@pytest.mark.parametrize("calls, ok", [
    (made(("get_weather", {"city": "paris"})), True),  # the optional unit left out; case is not a value
    (made(("get_weather", {"city": "Paris, France", "unit": "celsius"})), True),
    (made(("get_weather", {"city": "Lyon"})), False),
    (made(("get_weather", {"city": "Paris", "days": 3})), False),  # an argument no one expected
    (made(("get_weather", {"unit": "celsius"})), False),  # a required one missing
    (made(("get_time", {"city": "Paris"})), False),
    (made(), False),
])
def test_one_call_against_its_allowed_values(calls, ok):
    assert calls_match(json.dumps(WEATHER), calls)[0] is ok


def test_parallel_calls_match_in_any_order_and_one_to_one():
    expected = json.dumps([{"add": {"a": [1], "b": [2]}}, {"add": {"a": [3], "b": [4.0]}}])
    assert calls_match(expected, made(("add", {"a": 3, "b": 4}), ("add", {"a": 1.0, "b": 2})))[0]
    assert not calls_match(expected, made(("add", {"a": 1, "b": 2}), ("add", {"a": 1, "b": 2})))[0]


def test_no_call_expected_holds_only_where_none_was_made():
    assert calls_match("[]", "[]") == (True, "0 call(s) as expected")
    assert calls_match("[]", made(("get_weather", {"city": "Paris"}))) == \
        (False, "expected 0 call(s), the run made 1")


def test_an_expectation_that_is_not_calls_is_refused_naming_why():
    with pytest.raises(ValueError, match="calls: expected: call 0: argument 'city': a list of allowed"):
        VerifierSpec(kind="calls", expected=json.dumps([{"get_weather": {"city": "Paris"}}]))
    with pytest.raises(ValueError, match="calls: expected: not JSON"):
        VerifierSpec(kind="calls", expected="get_weather(Paris)")


def test_many_parallel_calls_match_in_any_order_and_a_number_is_never_a_boolean():
    expected = json.dumps([{"f": {"i": [i]}} for i in range(8)])
    assert calls_match(expected, made(*[("f", {"i": i}) for i in reversed(range(8))]))[0]
    assert not calls_match(json.dumps([{"f": {"x": [True]}}]), made(("f", {"x": 1})))[0]
    assert calls_match("[]", '{"name": "f"}') == \
        (False, "the run's calls are not a list of {name, arguments}")


def test_a_calls_verifier_judges_the_calls_and_any_other_the_answer():
    from jitagent.tasks.calls import judged

    calls = [{"name": "f", "arguments": {"x": 1}}]
    assert judged("calls", None, calls) == '[{"name": "f", "arguments": {"x": 1}}]'
    assert judged("exact", "42", calls) == "42"
