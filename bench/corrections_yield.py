"""How many failed runs of a warm bank the expert's corrections turn into verified training data.

    python bench/corrections_yield.py BANK.db TRIES [--expert qwen2.5-coder-1.5b] [--suite reasoning_gym]

Works on a copy of the bank (the corrections' replays are not kept); the suite's `score` and `final` tasks
are held out, as `jitagent train` holds them out. Prints one JSON line: tried, kept, tokens, wall time.
"""

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path

from harness_bank import HarnessBank
from jitagent.harness.seeds import spec_reader
from jitagent.improvement.training.correct import CorrectionConfig, Yield, corrections
from jitagent.improvement.training.export import ExportConfig
from jitagent.models import load_model
from jitagent.tasks.task import load_suite


async def kept(bank, expert, solver, tries: int, held: frozenset[str], tally: Yield) -> list[dict]:
    config = CorrectionConfig(tries=tries, budget_s=30)
    return [r async for r in corrections(bank, spec_reader(bank), expert, solver, config,
                                         ExportConfig(held_out=held), tally)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bank", type=Path)
    parser.add_argument("tries", type=int)
    parser.add_argument("--expert", default="qwen2.5-coder-1.5b")
    parser.add_argument("--suite", default="reasoning_gym")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / "bank.db"
        source = HarnessBank(args.bank)
        source.backup(copy)  # the bank's own copy: its database and its index together
        source.close()
        bank = HarnessBank(copy)
        held = frozenset(t.prompt for split in ("score", "final") for t in load_suite(args.suite, split))
        tally, start = Yield(), time.monotonic()
        records = asyncio.run(kept(bank, load_model(args.expert, slot="expert"), load_model("embedded"),
                                   args.tries, held, tally))
        bank.close()
    print(json.dumps({"tried": tally.tried, "kept": tally.kept, "skipped": tally.skipped,
                      "expert_prompt_tokens": tally.prompt_tokens,
                      "expert_completion_tokens": tally.completion_tokens,
                      "wall_s": round(time.monotonic() - start, 1),
                      "kept_clusters": sorted(r["cluster"] for r in records)}))


if __name__ == "__main__":
    main()
