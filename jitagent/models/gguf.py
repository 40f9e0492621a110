"""Find, assemble and verify the GGUF files that ship inside PyPI packages. No hub, ever."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import struct
from importlib import resources
from pathlib import Path

CHECKSUMS = json.loads(resources.files("jitagent").joinpath("model_checksums.json").read_text())
MODEL_NAMES = tuple(CHECKSUMS)
DEFAULT_MODEL = "qwen2.5-coder-0.5b"


class ModelFileError(Exception):
    """A model file is missing, incomplete or corrupt; the message says which part and how to fix it."""


def cache_dir() -> Path:
    return Path(os.environ.get("JITAGENT_CACHE", Path.home() / ".cache" / "jitagent")) / "models"


def _part_path(part: dict) -> Path:
    spec = importlib.util.find_spec(part["module"])
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileError(f"package {part['package']} is not installed: pip install {part['package']}")
    path = Path(list(spec.submodule_search_locations)[0]) / part["file"]
    if not path.exists():
        raise ModelFileError(f"{part['package']} is installed but {path} is missing: reinstall it")
    if path.stat().st_size != part["size"]:
        raise ModelFileError(f"{path} ({part['package']}) has {path.stat().st_size} bytes, expected "
                             f"{part['size']}: "
                             f"the part is corrupt or truncated; reinstall {part['package']}")
    return path


def _sha256(path: Path, into: hashlib._Hash | None = None) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            if into is not None:
                into.update(chunk)
    return h.hexdigest()


def gguf_architecture(path: Path) -> str:
    """Read `general.architecture` from a GGUF header."""
    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
    with open(path, "rb") as f:
        if f.read(4) != b"GGUF":
            raise ModelFileError(f"{path} is not a GGUF file (bad magic)")
        _version, _tensors, n_kv = struct.unpack("<IQQ", f.read(20))

        def read_str() -> str:
            (n,) = struct.unpack("<Q", f.read(8))
            return f.read(n).decode(errors="replace")

        def skip(vtype: int) -> object:
            if vtype in scalar:
                fmt = "<" + scalar[vtype]
                return struct.unpack(fmt, f.read(struct.calcsize(fmt)))[0]
            if vtype == 8:
                return read_str()
            if vtype == 9:
                item_type, count = struct.unpack("<IQ", f.read(12))
                for _ in range(count):
                    skip(item_type)
                return None
            raise ModelFileError(f"{path}: unknown GGUF value type {vtype}")

        for _ in range(n_kv):
            key = read_str()
            (vtype,) = struct.unpack("<I", f.read(4))
            value = skip(vtype)
            if key == "general.architecture":
                return str(value)
    raise ModelFileError(f"{path}: GGUF header has no general.architecture")


def model_path(name: str = DEFAULT_MODEL) -> Path:
    """The verified GGUF for a named model, assembling split parts into the cache the first time."""
    if name not in CHECKSUMS:
        raise ModelFileError(f"unknown model {name!r}; known: {list(MODEL_NAMES)}")
    entry = CHECKSUMS[name]
    parts = [_part_path(p) for p in entry["parts"]]
    target = parts[0] if len(parts) == 1 else cache_dir() / entry["file"]
    stamp = cache_dir() / (entry["file"] + ".verified")
    stamp_text = f"{target}:{entry['sha256']}"
    if target.exists() and stamp.exists() and stamp.read_text() == stamp_text:
        return target
    if len(parts) > 1:
        _assemble(entry, parts, target)
    elif (got := _sha256(target)) != entry["sha256"]:
        raise ModelFileError(f"{target}: sha256 {got} != recorded {entry['sha256']}; "
                             f"reinstall {entry['parts'][0]['package']}")
    _check_arch(target, entry)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(stamp_text)
    return target


def _check_arch(path: Path, entry: dict) -> None:
    arch = gguf_architecture(path)
    if arch != entry["architecture"]:
        raise ModelFileError(f"{path}: GGUF says architecture {arch!r}, expected {entry['architecture']!r}")


def _assemble(entry: dict, parts: list[Path], target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".partial")
    whole = hashlib.sha256()
    with open(tmp, "wb") as out:
        for part, path in zip(entry["parts"], parts):
            if (got := _sha256(path, into=whole)) != part["sha256"]:
                tmp.unlink(missing_ok=True)
                raise ModelFileError(f"{path} ({part['package']}) sha256 {got} != recorded {part['sha256']}: "
                                     f"the part is corrupt; reinstall {part['package']}")
            with open(path, "rb") as f:
                while chunk := f.read(1 << 20):
                    out.write(chunk)
    if whole.hexdigest() != entry["sha256"]:
        tmp.unlink(missing_ok=True)
        raise ModelFileError(f"assembled file sha256 {whole.hexdigest()} != recorded {entry['sha256']}")
    os.replace(tmp, target)  # atomic: a half-written file is never taken for a model
