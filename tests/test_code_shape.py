"""The shape the code keeps (issue 20): no hand-written class over 300 lines, no function over 50, and the
CLI imports its subcommand modules directly. Generated stubs (jitagent/v1) are not hand-written."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [p for folder in ("jitagent", "harness_bank", "bench") for p in (ROOT / folder).rglob("*.py")
           if "v1" not in p.relative_to(ROOT).parts]


def sizes(kinds: tuple[type, ...]) -> list[tuple[int, str]]:
    found = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, kinds):
                found.append((node.end_lineno - node.lineno + 1, f"{path.relative_to(ROOT)}:{node.name}"))
    return sorted(found, reverse=True)


def test_no_class_over_300_lines():
    assert [s for s in sizes((ast.ClassDef,)) if s[0] > 300] == []


def test_no_function_over_50_lines():
    assert [s for s in sizes((ast.FunctionDef, ast.AsyncFunctionDef)) if s[0] > 50] == []


def test_the_cli_imports_its_subcommands_directly():
    cli = [ROOT / "jitagent" / name for name in ("cli.py", "cli_common.py", "bank_cli.py")]
    cli += list((ROOT / "jitagent").glob("*/cli.py"))
    assert [p.name for p in cli if "importlib" in p.read_text()] == []
