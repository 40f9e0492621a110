"""What a fixed arm's unit depends on besides its task, so that a ledger row is reused only where none of it
changed: the runtime's digest (the code and prompts that decide how a seed behaves), the solver model and the
per-task budget (budgets are in seconds: another budget can change a reward)."""

from __future__ import annotations

import hashlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# What decides how a seed behaves on a real model: the runtime, the seeds and the tools they call.
RUNTIME_SOURCES = ("jitagent/runtime", "seeds", "jitagent/sandbox/tools.py", "jitagent/sandbox/launch.py",
                   "jitagent/sandbox/launcher.py", "jitagent/sandbox/host.py", "jitagent/models")
# no seed reads the tool writer's prompts, and the scripted model never runs one on a real model
NOT_RUNTIME = ("seeds/toolmaking_prompts.yaml", "jitagent/models/scripted.py")


def runtime_digest(root: Path = ROOT) -> str:
    """A digest of the files that decide a seed's behaviour, to tell whether a baseline is current."""
    h = hashlib.sha256()
    for source in RUNTIME_SOURCES:
        path = root / source
        for file in sorted(path.rglob("*") if path.is_dir() else [path]):
            if (file.is_file() and file.suffix in (".py", ".yaml") and "__pycache__" not in file.parts
                    and str(file.relative_to(root)) not in NOT_RUNTIME):
                h.update(str(file.relative_to(root)).encode() + b"\0" + file.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def unit_context(model: str, budget_s: float, root: Path = ROOT) -> dict:
    """The fields a ledger row carries so that a later run can tell whether it would run the same."""
    return {"runtime": runtime_digest(root), "model": model, "budget_s": budget_s}
