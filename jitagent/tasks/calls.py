"""Checking a run's calls of the client's functions against the calls expected: each expected call is
{name: {argument: [allowed values]}}, an allowed "" marks an argument that may be left out; the calls match
one to one, in any order (parallel calls have none), with no argument the expectation does not name. An
expectation of no calls holds where the run called nothing (the task needed no function)."""

from __future__ import annotations

import json


def judged(verifier_kind: str, answer: str | None, calls: list[dict]) -> str | None:
    """What a task's verifier judges of a run: under a calls verifier the calls of the client's functions it
    paused at (as JSON), else its answer."""
    return json.dumps(calls) if verifier_kind == "calls" else answer


def expectation_problem(text: str) -> str | None:
    """Why `text` is not a list of expected calls, or None."""
    try:
        calls = json.loads(text)
    except ValueError as exc:
        return f"not JSON: {exc}"
    if not isinstance(calls, list):
        return "a list of {name: {argument: [allowed values]}}"
    for i, call in enumerate(calls):
        if not (isinstance(call, dict) and len(call) == 1 and isinstance(next(iter(call.values())), dict)):
            return f"call {i}: one {{name: {{argument: [allowed values]}}}}"
        if bad := [a for a, allowed in next(iter(call.values())).items() if not isinstance(allowed, list)]:
            return f"call {i}: argument {bad[0]!r}: a list of allowed values"
    return None


def calls_match(expected_text: str, made_text: str) -> tuple[bool, str]:
    """Whether the calls made (a JSON list of {name, arguments}) are the expected ones, and why not."""
    expected = json.loads(expected_text)
    try:
        made = json.loads(made_text)
    except ValueError:
        return False, "the run's calls are not JSON"
    if not isinstance(made, list) or not all(isinstance(m, dict) for m in made):
        return False, "the run's calls are not a list of {name, arguments}"
    if len(made) != len(expected):
        return False, f"expected {len(expected)} call(s), the run made {len(made)}"
    fits = [[_call_matches(e, m) is None for m in made] for e in expected]
    if _matched(fits):
        return True, f"{len(made)} call(s) as expected"
    return False, _call_matches(expected[0], made[0]) if len(made) == 1 else "no order of the calls matches"


def _matched(fits: list[list[bool]]) -> bool:
    """Whether every expected call gets a call of its own that fits it (a bipartite matching, found by
    augmenting paths: calls in any order, each used once)."""
    owner: dict[int, int] = {}

    def place(e: int, seen: set[int]) -> bool:
        for m, fit in enumerate(fits[e]):
            if fit and m not in seen:
                seen.add(m)
                if m not in owner or place(owner[m], seen):
                    owner[m] = e
                    return True
        return False
    return all(place(e, set()) for e in range(len(fits)))


def _call_matches(expected: dict, made: dict) -> str | None:
    """Why `made` is not the `expected` call, or None."""
    (name, allowed), = expected.items()
    if made.get("name") != name:
        return f"expected a call of {name}, got {made.get('name')}"
    arguments = made.get("arguments") if isinstance(made.get("arguments"), dict) else {}
    if extra := sorted(set(arguments) - set(allowed)):
        return f"{name}: unexpected argument {extra[0]!r}"
    for argument, values in allowed.items():
        if argument not in arguments:
            if "" not in values:
                return f"{name}: missing argument {argument!r}"
        elif not any(_same(arguments[argument], v) for v in values):
            return f"{name}: {argument}={arguments[argument]!r} is not one of {values!r}"
    return None


def _same(given, allowed) -> bool:
    """Numbers by value (1 and 1.0), texts without case or surrounding space, lists and objects by part."""
    if isinstance(given, bool) != isinstance(allowed, bool):  # 1 == True in Python, not in a call
        return False
    if isinstance(given, (int, float)) and isinstance(allowed, (int, float)):
        return float(given) == float(allowed)
    if isinstance(given, str) and isinstance(allowed, str):
        return given.strip().casefold() == allowed.strip().casefold()
    if isinstance(given, list) and isinstance(allowed, list):
        return len(given) == len(allowed) and all(_same(g, a) for g, a in zip(given, allowed))
    if isinstance(given, dict) and isinstance(allowed, dict):
        return given.keys() == allowed.keys() and all(_same(given[k], allowed[k]) for k in given)
    return given == allowed
