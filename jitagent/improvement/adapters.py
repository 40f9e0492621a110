"""A harness that runs its solver with an adapter, and where that adapter comes from when it runs: the bank's
record, and its GGUF file on this host.

`adapter_variant(spec, adapter)` is the harness with the adapter (an arm of its own: a new id, its parent the
harness); the pipeline derives it as a free mutation (no meta-model call) of a cluster's arm once the bank
holds an adapter of the solver's base model (pipeline.py), and `jitagent train --arms` ahead of time.

The bank keeps an adapter's bytes (every replica of a shared bank can serve it); a model that loads the
file needs it on disk, so it is written once into the cache under its digest and checked against it before
use. An HTTP back-end reads only the name it serves the adapter under.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from harness_bank import HarnessBank
from harness_bank.adapters import AdapterRecord
from harness_bank.records import BankError
from jitagent.common.errors import clipped
from jitagent.harness.spec import HarnessSpec
from jitagent.models.base import Adapter, ModelClient, ModelError, base_model
from jitagent.models.gguf import cache_dir

SHA256 = re.compile(r"[0-9a-f]{64}")
_CHECKED: set[Path] = set()  # files whose digest this process has checked (a file is immutable by name)


def adapter_variant(spec: HarnessSpec, adapter: AdapterRecord) -> HarnessSpec:
    """`spec` with its solver running with `adapter`."""
    note = f"The solver runs with adapter {adapter.id} ({adapter.name})."
    return spec.variant(f"@{adapter.id[:8]}", note, "adapter", lambda data: data.update(adapter=adapter.id))


class AdapterUnavailable(ModelError):
    """A harness names an adapter this solver cannot run with: not in the bank, or of another base model."""


def solver_for(bank: HarnessBank, solver: ModelClient, spec: HarnessSpec) -> ModelClient:
    """The solver as `spec` runs it: with its adapter, where it names one. AdapterUnavailable where the bank
    does not hold it or it adapts another model than this solver's."""
    if spec.adapter is None:
        return solver
    record = bank.adapter(spec.adapter)
    if record is None or record.id != spec.adapter:
        raise AdapterUnavailable(f"harness {spec.name} runs with adapter {spec.adapter}, which is not in the "
                                 "bank")
    if record.base_model != base_model(solver):
        raise AdapterUnavailable(f"harness {spec.name} runs with adapter {record.id} of {record.base_model}; "
                                 f"this solver is {base_model(solver)}")
    return solver.with_adapter(resolve(bank, spec.adapter))


def adapter_dir() -> Path:
    return cache_dir().parent / "adapters"


def resolve(bank: HarnessBank, adapter_id: str) -> Adapter:
    """The adapter `adapter_id` as a model takes it: its served name and its GGUF on this host."""
    record = bank.adapter(adapter_id)
    if record is None or record.id != adapter_id:
        raise BankError(f"harness asks for adapter {adapter_id}, which is not in the bank")
    if not SHA256.fullmatch(record.sha256):  # it names a file: a bank's row must not choose the path
        sha = clipped(repr(record.sha256), 80)
        raise AdapterUnavailable(f"adapter {adapter_id}: its sha256 {sha} is not one")
    path = adapter_dir() / f"{record.sha256}.gguf"
    if path not in _CHECKED and (not path.exists() or _sha256(path) != record.sha256):
        data = bank.adapter_file(record.id)
        if hashlib.sha256(data).hexdigest() != record.sha256:
            raise AdapterUnavailable(f"adapter {adapter_id}: the bank's bytes do not match its sha256 "
                                     f"(damaged or altered); not used")
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.partial")
        tmp.write_bytes(data)
        os.replace(tmp, path)  # whole or absent: a concurrent reader never sees half a file
    _CHECKED.add(path)
    return Adapter(id=record.id, served_name=record.served_name, path=path)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
