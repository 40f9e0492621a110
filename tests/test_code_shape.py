"""The shape the code keeps (issue 20): no hand-written class over 300 lines, no function over 50, the
CLI imports its subcommand modules directly, and the rest of the package reaches the bank through its
facade (issue 28). Generated stubs (jitagent/v1) are not hand-written."""

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


def around_the_bank(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of each reach past the bank's facade: SQL sent to its store, its Workshop part."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        owner = node.value.id if isinstance(node.value, ast.Name) else getattr(node.value, "attr", None)
        if node.attr == "query" and owner == "store":
            found.append((node.lineno, "store.query"))
        elif node.attr == "workshop":
            found.append((node.lineno, ".workshop"))
    return sorted(found)


def test_outside_the_bank_nothing_reaches_past_its_facade():
    outside = [p for p in SOURCES if p.relative_to(ROOT).parts[0] != "harness_bank"]
    assert [f"{path.relative_to(ROOT)}:{line}: {what}" for path in outside
            for line, what in around_the_bank(ast.parse(path.read_text()))] == []
