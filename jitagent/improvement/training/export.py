"""Training data from the bank's own verified runs, in the JSONL shapes TRL reads.

- SFT records (`{"messages": [...], "prompt_messages": n}`): a run with reward ≥ `min_reward`, as the solver
  saw it — the system prompt, few-shot pairs and first user message of the harness it ran in, filled for its
  task (the first `n` messages: the prompt, not learned) — and the assistant turns (with the observations
  between them) that gave its answer. Deduplicated by task text and turns; at most
  `per_cluster` per cluster, the newest.
- Preference pairs (`{"prompt", "chosen", "rejected"}`, conversational): the same task text, a run that
  passed and one that failed, both of the same action format; the prompt is the passed run's harness's.

Only outcomes and practice's passed tries are sources, so only what a verifier, a later report or a client's
check scored. Tasks whose text is `held_out` (a suite's `final` split, say) are never exported: a model
trained on them ahead of time would be measured on what it was taught. Every record names the run it came
from (`run_id`, `outcome:N` for an outcome with no server run, such as a warm-up's, or `practice:N` for a
try) and the evidence that admitted it (`verifier:KIND`, `report:TENANT`, `practice:KIND`; None where the
bank did not keep it).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator

from pydantic import BaseModel, Field

from harness_bank import HarnessBank, pools
from harness_bank.records import Solution
from jitagent.harness.spec import HarnessSpec
from jitagent.runtime import prompts
from jitagent.runtime.conversation import Conversation


class ExportConfig(BaseModel):
    min_reward: float = Field(1.0, gt=0, le=1, description="a run with at least this reward is a positive")
    per_cluster: int = Field(200, ge=1, description="SFT records per cluster at most, the newest")
    held_out: frozenset[str] = Field(frozenset(), description="task texts never exported")
    pool: str = Field("", pattern=f"^(|{pools.NAME})$", description="only the runs of this pool's clusters "
                      "(a tenant's, or one tenants share); default: every cluster's")


def source(solution: Solution) -> str:
    return solution.run_id or f"outcome:{solution.outcome_id}"


def opening(spec: HarnessSpec, task_text: str) -> list[dict]:
    """What the solver is shown before its first reply in `spec` on this task (its step-0 prompts; for a
    harness with examples, its own few-shot pairs stand where its run was shown the cluster's solutions)."""
    talk = Conversation(task_text, depth=0, seed=0)
    fields = prompts.template_fields(talk, list(spec.tools.tools))
    return [*prompts.system_messages(spec.prompts, fields), prompts.task_message(spec.prompts, fields)]


def usable(bank: HarnessBank, config: ExportConfig) -> list[Solution]:
    """Every outcome of the pool that left its turns and is not held out, newest first."""
    held_out = {text.strip() for text in config.held_out}
    return [s for s in bank.solutions(None, 0.0, None, config.pool) if s.task_text.strip() not in held_out]


def sft_records(bank: HarnessBank, spec_of: Callable[[str], HarnessSpec], config: ExportConfig
                ) -> Iterator[dict]:
    seen: set[tuple[str, str]] = set()
    per_cluster: dict[str | None, int] = defaultdict(int)
    for s in usable(bank, config):
        key = (s.task_text.strip(), repr(s.turns))
        if s.reward < config.min_reward or key in seen or per_cluster[s.cluster] >= config.per_cluster:
            continue
        seen.add(key)
        per_cluster[s.cluster] += 1
        prompt = opening(spec_of(s.harness_id), s.task_text)
        yield {"messages": [*prompt, *s.turns], "prompt_messages": len(prompt), "run_id": source(s),
               "harness_id": s.harness_id, "cluster": s.cluster, "reward": s.reward, "evidence": s.evidence}


def preference_pairs(bank: HarnessBank, spec_of: Callable[[str], HarnessSpec], config: ExportConfig
                     ) -> Iterator[dict]:
    by_task: dict[str, list[Solution]] = defaultdict(list)
    for s in usable(bank, config):
        by_task[s.task_text.strip()].append(s)
    for runs in by_task.values():
        passed = [s for s in runs if s.reward >= config.min_reward]
        failed = [s for s in runs if s.reward < config.min_reward]
        pairs: set[tuple[str, str]] = set()
        for good in passed:
            spec = spec_of(good.harness_id)
            for bad in failed:
                key = (repr(good.turns), repr(bad.turns))
                if spec_of(bad.harness_id).solution_format != spec.solution_format or key in pairs:
                    continue
                pairs.add(key)
                yield {"prompt": opening(spec, good.task_text), "chosen": good.turns, "rejected": bad.turns,
                       "chosen_run_id": source(good), "rejected_run_id": source(bad), "cluster": good.cluster}
