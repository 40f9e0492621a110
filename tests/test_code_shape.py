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
    cli = list((ROOT / "jitagent" / "cli").glob("*.py"))
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


# --- the layering (issue 42): which folder of jitagent may import which -------------------------------
# Each folder may import the folders named here and nothing else of ours (itself and the package's root
# aside). `harness_bank` is the bank, a package apart that imports nothing of jitagent.
BELOW_IMPROVEMENT = {"common", "models", "sandbox", "harness", "tasks", "runtime", "config", "harness_bank"}
MAY_IMPORT = {
    "common": set(),
    "models": {"common"},
    "sandbox": {"common"},
    "harness": {"common", "sandbox"},
    "tasks": {"common", "harness", "sandbox"},
    "runtime": {"common", "models", "sandbox", "harness", "tasks"},
    "config": {"common", "models", "harness_bank"},
    "improvement": BELOW_IMPROVEMENT,
    "solving": BELOW_IMPROVEMENT | {"improvement"},
    "offline": BELOW_IMPROVEMENT | {"improvement", "solving"},
    # a result on the wire carries the run's and the synthesis's records
    "protocol": {"common", "harness", "tasks", "runtime", "improvement", "solving", "v1", "harness_bank"},
    "fleet": {"common", "config", "tasks"},
    # `sandbox`: the server reclaims what a killed server's runs left before it serves
    "doors": {"common", "config", "sandbox", "harness", "tasks", "solving", "protocol", "fleet", "v1"},
    "benchmark": BELOW_IMPROVEMENT | {"improvement", "solving", "offline"},
    "cli": set(),  # the top: every folder (checked apart: nothing imports the CLI)
    "harness_bank": set(),
}
# the parts of the solving layer a door may not touch: it goes through `Solving`
DOORS_NEVER = ("jitagent.solving.pipeline", "harness_bank")


def runtime_imports(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, module) of each import of ours, a function's lazy ones included; a `TYPE_CHECKING` block's
    (types only, never run) left out."""
    skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(
        node.test) for n in ast.walk(node)}
    found = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names]
            found += [(node.lineno, name if module_path(name) else node.module) for name in names]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
    return [(line, name) for line, name in found if name.split(".")[0] in ("jitagent", "harness_bank")]


def module_path(name: str) -> Path | None:
    base = ROOT.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def folder_of(module: str) -> str:
    """The folder of jitagent a module is in ("" for the package's own top modules), or the bank."""
    parts = module.split(".")
    if parts[0] == "harness_bank":
        return "harness_bank"
    return parts[1] if len(parts) > 1 and (ROOT / "jitagent" / parts[1]).is_dir() else ""


def package_modules() -> dict[str, Path]:
    modules = {}
    for path in SOURCES:
        rel = path.relative_to(ROOT)
        if rel.parts[0] == "bench":
            continue
        name = ".".join(rel.with_suffix("").parts).removesuffix(".__init__")
        modules[name] = path
    return modules


def test_every_folder_imports_only_the_folders_below_it():
    crossings = []
    for name, path in package_modules().items():
        folder = folder_of(name)
        if folder in ("", "cli"):  # jitagent/__init__ and __main__ name their homes; the CLI is the top
            continue
        allowed = MAY_IMPORT[folder] | {folder, ""}  # the package's root: its version and default address
        crossings += [f"{name}:{line} imports {target}" for line, target in runtime_imports(ast.parse(
            path.read_text())) if folder_of(target) not in allowed]
    assert crossings == [], crossings


def test_nothing_below_the_cli_imports_it():
    assert [f"{name}: {target}" for name, path in package_modules().items() if folder_of(name) != "cli"
            and name not in ("jitagent.__main__",)
            for _, target in runtime_imports(ast.parse(path.read_text())) if folder_of(target) == "cli"] == []


def test_no_door_imports_the_pipeline_or_the_bank():
    doors = {n: p for n, p in package_modules().items() if folder_of(n) == "doors"}
    assert [f"{name}:{line} imports {target}" for name, path in doors.items()
            for line, target in runtime_imports(ast.parse(path.read_text()))
            if target.startswith(DOORS_NEVER)] == []


def test_no_import_circles():
    """Between modules, lazy imports included: a circle is two modules that cannot be read apart."""
    modules = package_modules()
    graph = {name: {t if t in modules else t.rsplit(".", 1)[0] for _, t in runtime_imports(ast.parse(
        path.read_text()))} & modules.keys() - {name} for name, path in modules.items()}
    for name in graph:  # a package's __init__ is imported with each of its modules; not a circle of theirs
        graph[name] -= {n for n in graph if name.startswith(n + ".")}
    circles, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                circles.append(" -> ".join(stack[stack.index(nxt):] + [nxt]))
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert circles == [], circles
