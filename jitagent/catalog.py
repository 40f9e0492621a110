"""The seed harnesses that ship with the package (the bank's first generation)."""

from __future__ import annotations

from functools import cache
from importlib import resources
from pathlib import Path

from jitagent.spec import HarnessSpec, load_spec, parse_spec

SEED_NAMES = ("direct", "react", "plan_and_execute", "reflexion", "self_refine", "self_consistency",
              "program_of_thought", "codeact", "rewoo", "least_to_most", "recursive", "tree_of_thoughts",
              "test_driven")


@cache
def load_seeds() -> dict[str, HarnessSpec]:
    root = resources.files("jitagent.seeds")
    seeds = {}
    for name in SEED_NAMES:
        spec = parse_spec(root.joinpath(f"{name}.yaml").read_text())
        seeds[name] = spec.derive(origin="seed", generator="human")
    return seeds


def resolve_harness(name_or_path: str) -> HarnessSpec:
    """A seed by name, or a spec file."""
    seeds = load_seeds()
    if name_or_path in seeds:
        return seeds[name_or_path]
    if Path(name_or_path).exists():
        return load_spec(name_or_path)
    raise ValueError(f"no harness {name_or_path!r}: not a seed ({', '.join(seeds)}) nor a file")


def seed_bank(bank) -> list[str]:
    """Put the 13 seeds into a harness bank (idempotent)."""
    return [bank.add_harness(spec.model_dump(mode="json")) for spec in load_seeds().values()]
