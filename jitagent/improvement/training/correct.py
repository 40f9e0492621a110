"""On-policy correction: a stronger model rewrites only the failing turn of the solver's own failed run.

For a run the verifier failed, the expert is shown the run as the solver saw it (its harness's opening
prompts and the turns so far), the turn that gave the wrong answer and the verifier's verdict, and writes
that turn again, in the same format. The run is then replayed — its earlier turns as they were, the
corrected turn in place of the failing one, the solver itself for any turn after — through the real
runtime, sandbox and verifier. Only a corrected run the verifier passes becomes training data: the rest of
the run stays the solver's own, so the solver keeps its style and learns where it went wrong (imitating
whole expert runs instead lost points in the field's measurement).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from harness_bank import HarnessBank
from harness_bank.records import Solution
from jitagent.common.usage import Usage
from jitagent.harness.seeds import shipped_prompts
from jitagent.harness.spec import HarnessSpec
from jitagent.improvement.adapters import solver_for
from jitagent.improvement.training.export import ExportConfig, opening, usable
from jitagent.models.base import Generation, ModelClient
from jitagent.runtime.agent import Runtime
from jitagent.tasks.task import Task

EXPERT_SYSTEM = shipped_prompts("correction")["system"]


class CorrectionConfig(BaseModel):
    tries: int = Field(40, ge=1, le=10_000, description="failed runs tried at most (worth_correcting)")
    min_reward: float = Field(1.0, gt=0, le=1, description="what a corrected run must score to be kept")
    max_tokens: int = Field(512, ge=16, le=4096, description="the expert's rewritten turn, at most")
    budget_s: float = Field(60.0, gt=0, le=1800, description="a replayed run's wall-clock budget")


@dataclass
class Yield:
    """What correcting cost and gave: runs tried, corrections verified, the tokens of the expert and of the
    replayed runs (None where a back-end could not tell) and wall time."""

    tried: int = 0
    kept: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # why a failed run was not tried
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0
    wall_s: float = 0.0

    def count(self, usage: Usage) -> None:
        total = Usage(self.prompt_tokens, self.completion_tokens) + usage
        self.prompt_tokens, self.completion_tokens = total.prompt_tokens, total.completion_tokens

    def skip(self, why: str) -> None:
        self.skipped[why] = self.skipped.get(why, 0) + 1


class Replay:
    """A model client that answers with the given turns in order, then hands over to `then` (the solver).
    A turn is a whole reply as the run kept it; it is given back as a model would have written it: after
    the prefill the runtime opened the reply with, up to the first stop sequence (the runtime adds both
    again)."""

    def __init__(self, turns: list[str], then: ModelClient):
        self.turns, self.then, self.name = list(turns), then, f"replay+{then.name}"

    async def complete(self, messages, stop: list[str] | None = None, **kw) -> Generation:
        if not self.turns:
            return await self.then.complete(messages, stop=stop, **kw)
        text = self.turns.pop(0)
        opening = messages[-1]["content"].strip() if messages and messages[-1]["role"] == "assistant" else ""
        if opening and text.startswith(opening):
            text = text[len(opening):].lstrip(" \n")
        for sequence in stop or ():
            text = text.split(sequence, 1)[0]
        return Generation([text], Usage(0, 0), 0.0, self.name, ["stop"])  # no model ran: no tokens spent


def failing_turn(turns: list[dict]) -> int | None:
    """The index of the turn that gave the wrong answer: the run's last assistant turn."""
    return next((i for i in range(len(turns) - 1, -1, -1) if turns[i]["role"] == "assistant"), None)


def expert_messages(spec: HarnessSpec, failed: Solution, at: int) -> list[dict]:
    """What the expert is shown: the run as the solver saw it, up to the failing turn, that turn and why it
    failed."""
    seen = [*opening(spec, failed.task_text), *failed.turns[:at]]
    transcript = "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in seen)
    return [{"role": "system", "content": EXPERT_SYSTEM},
            {"role": "user", "content": f"{transcript}\n\n[the assistant's turn, which failed]\n"
                                        f"{failed.turns[at]['content']}\n\n"
                                        f"[the verifier]\n{failed.verdict}\n\n"
                                        "Write the corrected turn only."}]


def worth_correcting(bank: HarnessBank, failed: list[Solution]) -> list[Solution]:
    """The order failed runs are tried in: the clusters in turn, so that one cluster cannot take every try,
    and in each the runs of its better arms first (by the bank's mean reward; the newest first among equals).
    An adapter serves the arms that win; a corrected turn of an arm that rarely wins teaches them little (30
    tries that took the newest failures all went to a cheap arm's direct answers, and none was kept)."""
    mean = {key: getattr(bank.cluster_stats(*key), "mean_reward", 0.0)  # no evidence yet: 0
            for key in {(run.cluster, run.harness_id) for run in failed}}
    by_cluster: dict[str, list[Solution]] = {}
    for run in sorted(failed, key=lambda r: -mean[r.cluster, r.harness_id]):  # stable: newest first kept
        by_cluster.setdefault(run.cluster, []).append(run)
    queues = list(by_cluster.values())
    return [queue[i] for i in range(max(map(len, queues), default=0)) for queue in queues if i < len(queue)]


def labelled_task(bank: HarnessBank, failed: Solution) -> Task | None:
    """The failed run's task with its verifier, as its cluster's labelled tasks keep it."""
    found = next((t for t in bank.labelled_tasks(failed.cluster) if t.get("id") == failed.task_id), None)
    return None if found is None else Task.model_validate(found)


async def corrections(bank: HarnessBank, spec_of: Callable[[str], HarnessSpec], expert: ModelClient,
                      solver: ModelClient, config: CorrectionConfig, export: ExportConfig | None = None,
                      tally: Yield | None = None) -> AsyncIterator[dict]:
    """SFT records (`{"messages", "run_id": "correction:<run>"...}`) of the failed runs the expert corrected
    and the verifier then passed, of those `export` takes (its pool, not held out). `tally` counts what was
    tried, kept and spent."""
    tally = tally if tally is not None else Yield()
    failed = [s for s in usable(bank, export or ExportConfig()) if s.reward < config.min_reward]
    for run in worth_correcting(bank, failed):
        if tally.tried >= config.tries:
            break
        spec, at = spec_of(run.harness_id), failing_turn(run.turns)
        task = labelled_task(bank, run)
        if at is None or spec.solution_format is None or task is None:
            tally.skip("no single turn to correct" if task is not None else "task not kept with its verifier")
            continue
        tally.tried += 1
        start = time.monotonic()
        try:
            rewrite = await expert.complete(expert_messages(spec, run, at), max_tokens=config.max_tokens,
                                            temperature=0.0, seed=0)
        finally:
            tally.wall_s += time.monotonic() - start
        tally.count(rewrite.usage)
        earlier = [t["content"] for t in run.turns[:at] if t["role"] == "assistant"]
        own = await asyncio.to_thread(solver_for, bank, solver, spec)  # the run's weights, its adapter's
        replayed = await Runtime(Replay([*earlier, rewrite.text.strip()], own)).run(
            spec, task, deadline=time.monotonic() + config.budget_s)
        tally.wall_s += replayed.cost.wall_s
        tally.count(replayed.cost.usage)  # the solver's turns after the corrected one, where it took any
        if replayed.reward is None or replayed.reward < config.min_reward or replayed.solution is None:
            continue
        tally.kept += 1
        prompt = opening(spec, run.task_text)
        yield {"messages": [*prompt, *replayed.solution], "prompt_messages": len(prompt),
               "run_id": f"correction:{run.run_id or f'outcome:{run.outcome_id}'}", "harness_id": spec.id,
               "cluster": run.cluster, "reward": replayed.reward}
