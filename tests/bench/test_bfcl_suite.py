"""BFCL's entries as jitagent tasks: functions as client tools in JSON Schema's types, the possible answer
as a calls verifier (none for irrelevance), seeded splits; read from a wheel built here in BFCL's layout."""

import json
import zipfile

import pytest


@pytest.fixture
def bfcl(bench_script):
    return bench_script("bfcl_suite")


def entry(category: str, i: int) -> dict:
    return {"id": f"{category}_{i}", "question": [[{"role": "user", "content": f"Area of triangle {i}?"}]],
            "function": [{"name": "geometry.area", "description": "An area.", "parameters": {
                "type": "dict", "required": ["base"], "properties": {
                    "base": {"type": "float"}, "sides": {"type": "tuple", "items": {"type": "any"}}}}}]}


def test_each_entry_is_a_task_with_its_functions_as_tools_and_its_answer_as_the_verifier(bfcl, tmp_path):
    wheel = tmp_path / "bfcl_eval-0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for category in bfcl.CATEGORIES:
            entries = [entry(category, i) for i in range(20)]
            z.writestr(f"bfcl_eval/data/BFCL_v4_{category}.json", "\n".join(map(json.dumps, entries)))
            if category not in bfcl.NO_CALL:
                z.writestr(f"bfcl_eval/data/possible_answer/BFCL_v4_{category}.json", "\n".join(
                    json.dumps({"id": e["id"], "ground_truth": [{"geometry.area": {"base": [2.0]}}]})
                    for e in entries))
    tasks, left_out = bfcl.suite(wheel)
    assert len(tasks) == 200 and left_out == {}
    simple = next(t for t in tasks if t.id == "simple_python_3")
    tool = simple.client_tools[0]
    assert tool.name == "geometry_area" and tool.parameters["type"] == "object"
    assert tool.parameters["properties"] == {"base": {"type": "number"},
                                             "sides": {"type": "array", "items": {"type": "string"}}}
    assert json.loads(simple.verifier.expected) == [{"geometry_area": {"base": [2.0]}}]
    assert next(t for t in tasks if t.type == "irrelevance").verifier.expected == "[]"
    splits = [t.split for t in tasks if t.type == "multiple"]
    assert (splits.count("learn"), splits.count("score"), splits.count("final")) == (2, 2, 16)
