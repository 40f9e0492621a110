"""BFCL v4's single-turn AST categories as a jitagent task suite (JSONL), read straight from the `bfcl-eval`
wheel (its data and possible answers ship in it; nothing of it is imported, so its pinned dependencies never
meet ours). Each entry becomes a task whose client tools are its functions (BFCL's types cast to JSON Schema
as BFCL casts them for OpenAI-style models, dots in names made underscores as BFCL does for them) and whose
`calls` verifier is its possible answer (none is right for the irrelevance categories: `[]`). The task's type
is its category. The bench's client side only: the product never reads BFCL, and sees a possible answer only
as a task's verifier after its answer is given.

Splits, per category, seeded: 10% `learn` (a warm-up's), 10% `score` (the screen's), the rest `final` (the
stream's). Entries whose schema is not one jitagent takes are left out and counted.

Usage:
  pip download --no-deps bfcl-eval==2026.3.23 -d /tmp/bfcl
  python bench/bfcl_suite.py --wheel /tmp/bfcl/bfcl_eval-2026.3.23-py3-none-any.whl --out bench/out/bfcl.jsonl
  jitagent bench --suite bench/out/bfcl.jsonl --stream 100 ...
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import re
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

from jitagent.tasks.conversation import transcript
from jitagent.tasks.task import Task

CATEGORIES = ("simple_python", "multiple", "parallel", "parallel_multiple", "live_simple", "live_multiple",
              "live_parallel", "live_parallel_multiple", "irrelevance", "live_irrelevance")
NO_CALL = ("irrelevance", "live_irrelevance")  # no possible answer: a call is wrong
# BFCL's GORILLA_TO_OPENAPI (bfcl_eval/constants/type_mappings.py); a type it does not name is a string
JSON_TYPES = {"integer": "integer", "number": "number", "float": "number", "string": "string",
              "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array", "dict": "object",
              "object": "object", "tuple": "array", "any": "string", "byte": "integer", "short": "integer",
              "long": "integer", "double": "number", "char": "string", "ArrayList": "array", "Array": "array",
              "HashMap": "object", "Hashtable": "object", "Queue": "array", "Stack": "array"}
SPLIT_SEED = 4401


def name_of(name: str) -> str:
    return re.sub(r"\.", "_", name)


def cast(schema: dict) -> dict:
    """A BFCL parameter schema in JSON Schema's types, nested properties and items too."""
    schema = dict(schema)
    schema["type"] = JSON_TYPES.get(schema.get("type", "string"), "string")
    if "properties" in schema:
        schema["properties"] = {k: cast(v) for k, v in schema["properties"].items()}
    if isinstance(schema.get("items"), dict):
        schema["items"] = cast(schema["items"])
    return schema


def tool_of(function: dict) -> dict:
    parameters = cast(copy.deepcopy(function.get("parameters", {"type": "dict", "properties": {}})))
    return {"name": name_of(function["name"]), "description": function.get("description", ""),
            "parameters": parameters}


def task_of(category: str, entry: dict, answer: dict | None, split: str) -> Task:
    turns = [(m["role"], m["content"]) for m in entry["question"][0]]
    expected = [{name_of(name): args for name, args in call.items()} for call in answer["ground_truth"]] \
        if answer else []
    return Task(id=entry["id"], prompt=transcript(turns), type=category, split=split,
                client_tools=[tool_of(f) for f in entry["function"]],
                verifier={"kind": "calls", "expected": json.dumps(expected)})


def lines(wheel: zipfile.ZipFile, name: str) -> list[dict]:
    return [json.loads(line) for line in wheel.read(name).decode().splitlines() if line.strip()]


def entries(wheel_path: Path) -> Iterator[tuple[str, dict, dict | None]]:
    """Each entry of the categories with its category and possible answer (None for the irrelevance ones)."""
    with zipfile.ZipFile(wheel_path) as wheel:
        for category in CATEGORIES:
            answers = {} if category in NO_CALL else {a["id"]: a for a in lines(
                wheel, f"bfcl_eval/data/possible_answer/BFCL_v4_{category}.json")}
            for entry in lines(wheel, f"bfcl_eval/data/BFCL_v4_{category}.json"):
                yield category, entry, answers.get(entry["id"])


def suite(wheel_path: Path) -> tuple[list[Task], dict[str, str]]:
    """The tasks, and why each entry left out was (by id)."""
    tasks, left_out = [], {}
    by_category: dict[str, list[tuple[dict, dict | None]]] = {}
    for category, entry, answer in entries(wheel_path):
        by_category.setdefault(category, []).append((entry, answer))
    for category, pairs in by_category.items():
        order = list(range(len(pairs)))
        random.Random(f"{SPLIT_SEED}:{category}").shuffle(order)
        tenth = max(1, len(pairs) // 10)
        splits = {i: "learn" if rank < tenth else "score" if rank < 2 * tenth else "final"
                  for rank, i in enumerate(order)}
        for i, (entry, answer) in enumerate(pairs):
            try:
                tasks.append(task_of(category, entry, answer, splits[i]))
            except ValueError as exc:  # pydantic's ValidationError is one
                left_out[entry["id"]] = str(exc).splitlines()[-2 if "\n" in str(exc) else -1].strip()
    return tasks, left_out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--wheel", type=Path, required=True, help="the bfcl-eval wheel (pip download)")
    parser.add_argument("--out", type=Path, required=True, help="the suite to write (JSONL)")
    args = parser.parse_args(argv)
    tasks, left_out = suite(args.wheel)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(t.model_dump_json(exclude_defaults=True) + "\n" for t in tasks))
    by_category = {c: sum(t.type == c for t in tasks) for c in CATEGORIES}
    print(f"{len(tasks)} tasks -> {args.out}: {by_category}; left out {len(left_out)}"
          + "".join(f"\n  {i}: {why}" for i, why in list(left_out.items())[:10]), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
