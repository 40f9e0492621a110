"""The seed harnesses that ship with the package (the bank's first generation), and the prompts that ship
beside them: what the runtime, the meta-model, the tool writer, the expert and MCP clients are told is data
in `seeds/*_prompts.yaml`, read here."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path
from typing import Protocol

from jitagent.common.safe_loading import yaml_load
from jitagent.harness.spec import HarnessSpec, load_spec, parse_spec

SEED_FILE = re.compile(r"\d+_\w+\.yaml")  # beside them, the *_prompts.yaml files are not seeds


@cache
def shipped_prompts(part: str) -> dict:
    """The prompts `seeds/{part}_prompts.yaml` holds for one part (synthesis, correction, mcp, toolmaking)."""
    return yaml_load(resources.files("jitagent.seeds").joinpath(f"{part}_prompts.yaml").read_text())


@cache
def load_seeds() -> dict[str, HarnessSpec]:
    """The seeds by name, from their files `seeds/NN_name.yaml` in NN order: the order they enter a bank
    (its listing and its index follow it) and are shown in."""
    files = sorted((f for f in resources.files("jitagent.seeds").iterdir() if SEED_FILE.fullmatch(f.name)),
                   key=lambda f: f.name)
    specs = [parse_spec(f.read_text()).derive(origin="seed", generator="human") for f in files]
    return {spec.name: spec for spec in specs}


class CarriesFunctions(Protocol):
    """A task as far as the seeds care (`jitagent.tasks.task.Task`, a layer above): the client's functions."""

    client_tools: list


def offered(spec: HarnessSpec, task: CarriesFunctions) -> bool:
    """Whether `spec` may run `task`. A harness that hands the client's functions to the model's own template
    (`tools.client: native`) is, where there are none, the model bare with no format of ours: it runs only
    tasks that carry them."""
    return spec.tools.client != "native" or bool(task.client_tools)


@cache
def native_seeds() -> tuple[str, ...]:
    """The ids of the seeds that hand the client's functions to the model's own template (`plain`)."""
    return tuple(s.id for s in load_seeds().values() if s.tools.client == "native")


def seeds_for(tasks: Iterable[CarriesFunctions]) -> dict[str, HarnessSpec]:
    """The seeds, by name, that may run some of `tasks` (see `offered`)."""
    calls = any(t.client_tools for t in tasks)
    return {name: s for name, s in load_seeds().items() if calls or s.tools.client != "native"}


def resolve_harness(name_or_path: str) -> HarnessSpec:
    """A seed by name, or a spec file (not one that runs with an adapter: its weights are in a bank)."""
    seeds = load_seeds()
    if name_or_path in seeds:
        return seeds[name_or_path]
    if Path(name_or_path).exists():
        spec = load_spec(name_or_path)
        if spec.adapter is not None:
            raise ValueError(f"{name_or_path}: the harness runs with adapter {spec.adapter}, which lives in "
                             "a bank: run it where the bank is (jitagent solve without --harness, or serve)")
        return spec
    raise ValueError(f"no harness {name_or_path!r}: not a seed ({', '.join(seeds)}) nor a file")


def seed_bank(bank) -> list[str]:
    """Put the seeds into a harness bank (idempotent)."""
    return [bank.add_harness(spec.model_dump(mode="json")) for spec in load_seeds().values()]


def spec_reader(bank) -> Callable[[str], HarnessSpec]:
    """A bank's harness by id, as a spec: parsed once, as a spec is immutable by id (its content digest)."""
    return lru_cache(4096)(lambda harness_id: parse_spec(bank.get(harness_id).spec))
