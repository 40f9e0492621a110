"""Adapters of the solver (LoRA weights) trained on the bank's own verified runs, kept in the bank itself so
every replica of a shared bank can serve them.

Content-addressed: an adapter's id is its GGUF file's digest (the first 16 hex digits, as a harness's), so
training twice on the same data with the same settings stores one adapter. Each keeps its lineage — the
base model and its digest, the training data's digest, the adapter it continued from, its settings — and
what training cost. The bank stores the bytes and reads nothing in them: it knows nothing of models. A harness
runs with an adapter when its spec names it; that pair is an arm like any other, with its own evidence.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from harness_bank.records import BankError
from harness_bank.store import Store, insert, now

FILES = ("gguf", "peft")  # llama.cpp's GGUF LoRA; the PEFT folder, zipped, that vLLM serves


@dataclass(frozen=True, kw_only=True)
class AdapterRecord:
    id: str
    sha256: str  # of the GGUF file
    name: str
    base_model: str
    base_digest: str
    data_digest: str
    parent_id: str | None
    config: dict
    stats: dict  # examples, corrections, tokens, seconds: what it learned from and what that cost
    created_at: float
    gate: dict | None = None  # {"accepted": bool, ...}: how it did against its parents on held-out tasks

    @property
    def usable(self) -> bool:
        """Whether its harness variants may join clusters' arms: not gated, or accepted by its gate."""
        return self.gate is None or bool(self.gate.get("accepted"))

    @property
    def pool(self) -> str:
        """The pool whose verified runs it learned from ("": every pool's): it serves that pool only."""
        return self.stats.get("pool", "")

    @property
    def served_name(self) -> str:
        """The model name an HTTP back-end serves it under (vLLM `--lora-modules NAME=DIR`)."""
        return f"adapter-{self.id}"


COLUMNS = ("id", "sha256", "name", "base_model", "base_digest", "data_digest", "parent_id", "config", "stats",
           "created_at", "gate")


def adapter_id(gguf: bytes) -> str:
    return hashlib.sha256(gguf).hexdigest()[:16]


class Adapters:
    def __init__(self, store: Store):
        self.store = store

    def add(self, *, gguf: bytes, peft: bytes, name: str, base_model: str, base_digest: str, data_digest: str,
            parent_id: str | None, config: dict, stats: dict) -> AdapterRecord:
        """Keep an adapter (once: the same file is the same adapter); its record."""
        sha = hashlib.sha256(gguf).hexdigest()
        if parent_id is not None and self.get(parent_id) is None:
            raise BankError(f"parent adapter {parent_id} is not in the bank")
        values = {"id": sha[:16], "sha256": sha, "name": name, "base_model": base_model,
                  "base_digest": base_digest, "data_digest": data_digest, "parent_id": parent_id,
                  "config": json.dumps(config, sort_keys=True), "stats": json.dumps(stats, sort_keys=True),
                  "gguf": gguf, "peft": peft, "created_at": now()}
        with self.store.transaction() as db:
            db.execute(insert("adapters", values) + " ON CONFLICT (id) DO NOTHING", tuple(values.values()))
        return self.get(sha[:16])

    def get(self, ref: str) -> AdapterRecord | None:
        """By id, or the newest of that name."""
        rows = self.store.query(f"SELECT {', '.join(COLUMNS)} FROM adapters WHERE id = ? OR name = ? "
                                "ORDER BY id = ? DESC, created_at DESC LIMIT 1", (ref, ref, ref))
        return _record(rows[0]) if rows else None

    def all(self) -> list[AdapterRecord]:
        """Every adapter, newest first."""
        return [_record(r) for r in self.store.query(
            f"SELECT {', '.join(COLUMNS)} FROM adapters ORDER BY created_at DESC, id")]

    def set_gate(self, adapter_id: str, gate: dict) -> None:
        """The gate's verdict on an adapter (the one thing about it that is not its content)."""
        with self.store.transaction() as db:
            if db.execute("UPDATE adapters SET gate = ? WHERE id = ?",
                          (json.dumps(gate, sort_keys=True), adapter_id)).rowcount != 1:
                raise BankError(f"no adapter {adapter_id} in the bank")

    def file(self, adapter_id: str, kind: str = "gguf") -> bytes:
        if kind not in FILES:
            raise BankError(f"an adapter has files {FILES}, not {kind!r}")
        rows = self.store.query(f"SELECT {kind} FROM adapters WHERE id = ?", (adapter_id,))
        if not rows:
            raise BankError(f"no adapter {adapter_id} in the bank")
        return bytes(rows[0][0])


def _record(row) -> AdapterRecord:
    values = {c: row[c] for c in COLUMNS}
    gate = None if values["gate"] is None else json.loads(values["gate"])
    return AdapterRecord(**values | {"config": json.loads(values["config"]),
                                     "stats": json.loads(values["stats"]), "gate": gate})


class AdapterFacade:
    """The adapters' calls on the bank's facade (HarnessBank inherits them)."""

    adapters: Adapters

    def add_adapter(self, **record) -> AdapterRecord:
        """Keep a trained adapter (see Adapters.add)."""
        return self.adapters.add(**record)

    def adapter(self, ref: str) -> AdapterRecord | None:
        """An adapter by id, or the newest of that name."""
        return self.adapters.get(ref)

    def list_adapters(self) -> list[AdapterRecord]:
        return self.adapters.all()

    def set_adapter_gate(self, adapter_id: str, gate: dict) -> None:
        """Record how the adapter did at its gate (`accepted` says whether its variants may join arms)."""
        self.adapters.set_gate(adapter_id, gate)

    def adapter_file(self, adapter_id: str, kind: str = "gguf") -> bytes:
        """An adapter's bytes: its GGUF (llama.cpp) or its zipped PEFT folder (vLLM)."""
        return self.adapters.file(adapter_id, kind)
