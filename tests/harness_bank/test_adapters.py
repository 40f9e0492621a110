"""Adapters in the bank: content-addressed, lineage kept, the same file stored once, on SQLite and
PostgreSQL."""

import hashlib

import pytest

from harness_bank import HarnessBank
from harness_bank.records import BankError

LINEAGE = {"base_model": "smollm2-135m", "base_digest": "b" * 64, "data_digest": "d" * 64,
           "config": {"rank": 8}, "stats": {"examples": 3, "train_s": 1.5}}


def test_an_adapter_is_its_files_digest_with_its_lineage_and_is_stored_once(bank):
    first = bank.add_adapter(gguf=b"GGUF one", peft=b"zip", name="a", parent_id=None, **LINEAGE)
    assert first.id == hashlib.sha256(b"GGUF one").hexdigest()[:16]
    assert first.served_name == f"adapter-{first.id}"
    again = bank.add_adapter(gguf=b"GGUF one", peft=b"zip", name="a", parent_id=None, **LINEAGE)
    assert again == first and len(bank.list_adapters()) == 1
    child = bank.add_adapter(gguf=b"GGUF two", peft=b"zip2", name="a", parent_id=first.id, **LINEAGE)
    assert bank.adapter("a") == child  # by name: the newest
    assert bank.adapter(first.id) == first and child.parent_id == first.id
    assert (child.config, child.stats) == ({"rank": 8}, {"examples": 3, "train_s": 1.5})
    assert bank.adapter_file(first.id) == b"GGUF one" and bank.adapter_file(child.id, "peft") == b"zip2"


def test_a_missing_parent_or_file_is_a_bank_error(bank):
    with pytest.raises(BankError, match="parent adapter nope is not in the bank"):
        bank.add_adapter(gguf=b"x", peft=b"y", name="a", parent_id="nope", **LINEAGE)
    assert bank.list_adapters() == []  # nothing half-stored
    with pytest.raises(BankError, match="no adapter 0123 in the bank"):
        bank.adapter_file("0123")
    stored = bank.add_adapter(gguf=b"x", peft=b"y", name="a", parent_id=None, **LINEAGE)
    with pytest.raises(BankError, match="not 'tar'"):
        bank.adapter_file(stored.id, "tar")


@pytest.mark.slow
def test_a_shared_bank_serves_the_same_adapter_to_every_replica(postgres_url, embedder):
    writer, reader = (HarnessBank(postgres_url, embedder=embedder) for _ in range(2))
    try:
        stored = writer.add_adapter(gguf=bytes(range(256)) * 64, peft=b"zip", name="a", parent_id=None,
                                    **LINEAGE)
        assert reader.adapter(stored.id) == stored
        assert reader.adapter_file(stored.id) == bytes(range(256)) * 64
    finally:
        writer.close()
        reader.close()
