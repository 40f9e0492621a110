"""An adapter from the bank, end to end: its verified runs exported (and, if asked, failed runs corrected by a
stronger model and verified), a LoRA trained on them, written as a GGUF LoRA and a PEFT folder, and kept in
the bank with its lineage and its cost. What the adapter then earns is the router's business: a harness that
runs with it is an arm like any other (`jitagent.improvement.adapters.adapter_variant`).
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from harness_bank import HarnessBank
from harness_bank.adapters import AdapterRecord
from jitagent.harness.spec import HarnessSpec
from jitagent.improvement.training.correct import CorrectionConfig, Yield, corrections
from jitagent.improvement.training.export import ExportConfig, sft_records
from jitagent.improvement.training.lora import TrainConfig, data_digest
from jitagent.models.base import ModelClient
from jitagent.models.gguf import CHECKSUMS, model_path


@dataclass
class Experts:
    """The stronger model that corrects failed runs, and the solver whose runs they are."""

    expert: ModelClient
    solver: ModelClient
    config: CorrectionConfig


async def training_data(bank: HarnessBank, spec_of: Callable[[str], HarnessSpec], export: ExportConfig,
                        experts: Experts | None, tally: Yield) -> list[dict]:
    """SFT records of the bank's corrected failed runs (their turns verified), then of its verified runs: the
    corrections first, so that a cap on examples never drops what the expert was paid for."""
    corrected = []
    if experts is not None:
        corrected = [record async for record in corrections(bank, spec_of, experts.expert, experts.solver,
                                                            experts.config, export, tally)]
    return corrected + await asyncio.to_thread(lambda: list(sft_records(bank, spec_of, export)))


def train_adapter(bank: HarnessBank, records: list[dict], *, base_model: str, config: TrainConfig,
                  name: str, parent: AdapterRecord | None = None, workdir: Path | None = None,
                  tally: Yield | None = None, pool: str = "",
                  on_step: Callable[[int, int, dict], None] | None = None
                  ) -> AdapterRecord:
    """A LoRA of `base_model` trained on `records` (the first `max_examples`), kept in `bank`. `workdir` keeps
    the checkpoint, so a run cut short resumes (default: a temporary folder). `tally`: the corrections' yield,
    kept as its cost. `pool`: whose verified runs `records` are ("": every pool's), the clusters it serves."""
    from jitagent.improvement.training.gguf_lora import peft_zip, write_gguf
    from jitagent.improvement.training.lora import train

    start, records = time.monotonic(), records[:config.max_examples]
    with tempfile.TemporaryDirectory(prefix="jitagent-train-") as scratch:
        folder = workdir or Path(scratch)
        trained = train(records, model_path(base_model), config, folder, on_step)
        gguf_path = folder / "adapter.gguf"
        write_gguf(trained, gguf_path)
        gguf = gguf_path.read_bytes()
    corrected = sum(1 for r in records if str(r.get("run_id", "")).startswith("correction:"))
    stats = trained.stats | {"records": len(records), "corrected_records": corrected,
                             "wall_s": round(time.monotonic() - start, 1), "pool": pool}
    if tally is not None:
        stats |= {"corrections_tried": tally.tried, "corrections_kept": tally.kept,
                  "correction_prompt_tokens": tally.prompt_tokens,
                  "correction_completion_tokens": tally.completion_tokens,
                  "correction_wall_s": round(tally.wall_s, 1)}
    return bank.add_adapter(gguf=gguf, peft=peft_zip(trained, base_model), name=name, base_model=base_model,
                            base_digest=CHECKSUMS[base_model]["sha256"], data_digest=data_digest(records),
                            parent_id=parent.id if parent else None, config=config.model_dump(), stats=stats)
