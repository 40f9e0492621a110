"""The adapter arms' bank: the examples arms' warm bank after a LoRA of the solver was trained on its
verified `learn` runs (and, with `--corrections N`, verified corrections of its failed ones by the tool
writer) and gated on every `score` task — built once, resumable (the bank keeps each adapter; training keeps
its checkpoint), and never reading `final`: its tasks are held out of the training data as well. Where
corrections were verified, a second adapter is trained on the same runs without them (`PLAIN_ADAPTER`):
what the corrections are worth, in the fixed arm (with none kept it would be the same data, the same
adapter).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from harness_bank import HarnessBank
from harness_bank.adapters import AdapterRecord
from harness_bank.bank import copy_bank
from jitagent.benchmark.arms import ADAPTER, PLAIN_ADAPTER
from jitagent.harness.seeds import spec_reader
from jitagent.improvement.training.correct import CorrectionConfig, Yield
from jitagent.improvement.training.export import ExportConfig
from jitagent.improvement.training.gate import Gate, gate
from jitagent.improvement.training.trainer import Experts, train_adapter, training_data
from jitagent.models.base import base_model
from jitagent.runtime.agent import Runtime


async def adapted_bank(bench, source: Path) -> tuple[Path, list[AdapterRecord]]:
    """The bank at out/adapter.db (a copy of `source`) holding the bench's adapters, the first gated."""
    out = bench.config.out
    path = out / "adapter.db"
    if not path.exists():
        copy_bank(source, path)
    bank = HarnessBank(path)
    try:
        adapter = bank.adapter(ADAPTER) or await _train(bench, bank, ADAPTER, bench.config.corrections)
        if adapter.gate is None:
            tasks = bench.tasks("score", every=True)
            job = bench.bar.add_task("gate", total=len(tasks))
            async for _ in gate(bank, Runtime(bench.solver), adapter, tasks, bench.unit_budget_s, Gate()):
                bench.bar.advance(job)
            adapter = bank.adapter(adapter.id)
        adapters = [adapter]
        if adapter.stats.get("corrected_records"):  # the ablation: the same runs, none corrected; not an arm
            plain = bank.adapter(PLAIN_ADAPTER) or await _train(bench, bank, PLAIN_ADAPTER, 0)
            if plain.gate is None:
                bank.set_adapter_gate(plain.id, {"accepted": False, "ablation": True})
            adapters.append(plain)
        return path, adapters
    finally:
        bank.close()


async def _train(bench, bank: HarnessBank, name: str, corrections: int) -> AdapterRecord:
    held_out = frozenset(t.prompt for split in ("score", "final") for t in bench.tasks(split, every=True))
    experts = None
    tally = Yield()
    if corrections:
        experts = Experts(bench.drafts.model, bench.solver,
                          CorrectionConfig(tries=corrections, budget_s=bench.unit_budget_s))
    records = await training_data(bank, spec_reader(bank), ExportConfig(held_out=held_out), experts, tally)
    job = bench.bar.add_task(f"train {name}", total=None)

    def on_step(step: int, steps: int, info: dict) -> None:
        bench.bar.update(job, total=steps, completed=step)

    return await asyncio.to_thread(train_adapter, bank, records, base_model=base_model(bench.solver),
                                   config=bench.config.train, name=name,
                                   workdir=bench.config.out / f"train-{name}",
                                   tally=tally if corrections else None, on_step=on_step)
