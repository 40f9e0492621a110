"""A BFCL stream scored by the wheel's own checker (its model config replaced, never imported), the
irrelevance categories by the relevance rule, only positions every arm finished counted. The wheel here is
built in BFCL's layout with a checker of its own that checks what it was asked."""

import gzip
import json
import sys
import zipfile

import pytest

CHECKER = '''
from bfcl_eval.constants.model_config import MODEL_CONFIG_MAPPING
def ast_checker(functions, output, answer, language, category, model):
    assert MODEL_CONFIG_MAPPING[model].underscore_to_dot and language.value == "python"
    expected = [{name.replace(".", "_"): {k: v[0] for k, v in args.items()}} for call in answer
                for name, args in call.items()]
    return {"valid": output == expected}
'''
UTILS = '''
def is_function_calling_format_output(d):
    return isinstance(d, list) and all(isinstance(i, dict) and len(i) == 1 for i in d)
def is_empty_output(d):
    return not is_function_calling_format_output(d) or len(d) == 0
'''


@pytest.fixture
def score(bench_script):
    bench_script("bfcl_suite")
    yield bench_script("bfcl_score")
    for name in [m for m in sys.modules if m.startswith("bfcl_eval")]:
        del sys.modules[name]


def wheel(path, categories, no_call):
    with zipfile.ZipFile(path, "w") as z:
        for category in categories:
            entry = {"id": f"{category}_0", "question": [[{"role": "user", "content": "Area?"}]],
                     "function": [{"name": "geo.area", "parameters": {"type": "dict", "properties": {}}}]}
            z.writestr(f"bfcl_eval/data/BFCL_v4_{category}.json", json.dumps(entry))
            if category not in no_call:
                z.writestr(f"bfcl_eval/data/possible_answer/BFCL_v4_{category}.json", json.dumps(
                    {"id": entry["id"], "ground_truth": [{"geo.area": {"base": [2]}}]}))
        z.writestr("bfcl_eval/constants/model_config.py", "import some_vendor_sdk_that_is_not_here\n")
        z.writestr("bfcl_eval/constants/enums.py",
                   "from enum import Enum\nclass Language(Enum):\n    PYTHON = 'python'\n")
        z.writestr("bfcl_eval/eval_checker/ast_eval/ast_checker.py", CHECKER)
        z.writestr("bfcl_eval/utils.py", UTILS)
    return path


def unit(arm, task, order, calls, passed):
    return ({"arm": arm, "task_id": task, "type": task.removesuffix("_0"), "repeat": 0, "order": order,
             "reward": float(passed), "passed": passed, "error": None, "wall_s": 1.0, "execution_tokens": 10,
             "synthesis_tokens": 0, "repair_tokens": 0, "budget_exhausted": False},
            {"arm": arm, "task_id": task, "repeat": 0, "calls": calls})


def test_the_wheels_checker_scores_each_arms_calls_on_the_positions_every_arm_finished(score, tmp_path):
    good, made_up = [{"name": "geo_area", "arguments": {"base": 2}}], [{"name": "geo_area", "arguments": {}}]
    units = [unit("bare", "simple_python_0", 0, good, True), unit("bare", "irrelevance_0", 1, good, False),
             unit("jit_stream", "simple_python_0", 0, made_up, False),
             unit("jit_stream", "irrelevance_0", 1, [], True),
             unit("bare", "multiple_0", 2, good, True)]  # one arm only: not paired, not counted
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(u[0]) + "\n" for u in units))
    (tmp_path / "trajectories.jsonl").write_text("".join(json.dumps(u[1]) + "\n" for u in units))
    text = score.report(tmp_path, wheel(tmp_path / "bfcl_eval-0-py3-none-any.whl", score.CATEGORIES,
                                        score.NO_CALL))
    rows = {}
    for line in text.splitlines():  # the first table's row of each arm
        rows.setdefault(line.split(" | ")[0].strip("| "), line.split(" | "))
    assert text.startswith("2 stream entries finished by every arm")
    # all entries, non-live AST, live AST, simple_python, ..., irrelevance
    assert rows["bare"][1:5] == ["50.0", "100.0", "–", "100.0"] and rows["bare"][-2] == "0.0"
    assert rows["jit_stream"][1:5] == ["50.0", "0.0", "–", "0.0"] and rows["jit_stream"][-2] == "100.0"
    paired = next(line for line in text.splitlines() if line.startswith("| jit_stream | +0.0"))
    assert paired.endswith("| 100.0 |")  # the stream's verifier agreed with the checker on both
    assert (tmp_path / "bfcl-categories.png").exists()


def test_a_unit_without_a_trace_of_its_calls_is_a_miss_and_is_counted(score, tmp_path):
    units = [unit("bare", "irrelevance_0", 0, [], True), unit("jit_stream", "irrelevance_0", 0, [], True)]
    del units[1][1]["calls"]  # ran out of budget before a harness was chosen: nothing traced
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(u[0]) + "\n" for u in units))
    (tmp_path / "trajectories.jsonl").write_text("".join(json.dumps(u[1]) + "\n" for u in units))
    text = score.report(tmp_path, wheel(tmp_path / "bfcl_eval-0-py3-none-any.whl", score.CATEGORIES,
                                        score.NO_CALL))
    assert "| jit_stream | 0.0 |" in text and "| bare | 100.0 |" in text  # no call, yet not scored right
    assert "{'bare': 0, 'jit_stream': 1}" in text


def test_each_arm_is_paired_with_itself_in_an_earlier_run_of_the_same_stream(score, tmp_path):
    good = [{"name": "geo_area", "arguments": {"base": 2}}]
    runs = {"earlier": [unit("bare", "simple_python_0", 0, good, True),
                        unit("bare", "multiple_0", 1, [], False), unit("bare", "parallel_0", 2, good, True)],
            "now": [unit("bare", "simple_python_0", 0, good, True), unit("bare", "multiple_0", 1, good, True),
                    unit("bare", "irrelevance_0", 2, [], True)]}  # another entry at 2: not paired
    runs["earlier"][1][0]["budget_exhausted"] = True
    for name, units in runs.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.jsonl").write_text("".join(json.dumps(u[0]) + "\n" for u in units))
        traces = "".join(json.dumps(u[1]) + "\n" for u in units)
        if name == "earlier":  # as a committed ledger keeps them
            (tmp_path / name / "trajectories.jsonl.gz").write_bytes(gzip.compress(traces.encode()))
        else:
            (tmp_path / name / "trajectories.jsonl").write_text(traces)
    checker = wheel(tmp_path / "bfcl_eval-0-py3-none-any.whl", score.CATEGORIES, score.NO_CALL)
    text = score.report(tmp_path / "now", checker, before=tmp_path / "earlier")
    assert "| bare | 2 | 50.0 | 100.0 | +50.0 (" in text
    assert text.rstrip().endswith("| 1 | +0.0 (+0.0 to +0.0) |")  # without multiple_0, out of budget before
