"""A run recorded as the bank's evidence: a verified run's outcome through the bank's admission, with its task
among its cluster's labelled tasks, and what a reflective mutation later reads of it (its last steps). The
pipeline records its runs here, and so do the warm-up, evolve and the adapters' gate."""

from __future__ import annotations

from harness_bank import Decision, HarnessBank, Outcome, RunRecord
from jitagent.harness.spec import HarnessSpec
from jitagent.runtime.events import RunResult
from jitagent.tasks.task import Task


def record_verified(bank: HarnessBank, task: Task, spec: HarnessSpec, run: RunResult,
                    cluster: str | None = None, delivery: str | None = None,
                    run_id: str | None = None, record: RunRecord | None = None) -> Decision | None:
    """A verified run into the bank (its harness stored first): its outcome through admission, with its run
    record in the same transaction where there is one, and its task among its cluster's labelled tasks,
    which code written for the cluster is tried on. None, nothing recorded, where the verifier did not
    judge the run (its reward is unknown: it paused at the client's calls under an answer's verifier)."""
    if run.reward is None:
        return None
    cluster = cluster or bank.cluster_for(task.prompt, task.type, tuple(task.tags))
    decision = bank.record_outcome(outcome_of(task, spec, run, cluster, delivery, run_id), run=record)
    bank.record_labelled_task(cluster, task.id, task.model_dump(mode="json", exclude_defaults=True))
    return decision


def outcome_of(task: Task, spec: HarnessSpec, run: RunResult, cluster: str | None = None,
               delivery: str | None = None, run_id: str | None = None) -> Outcome:
    """A verified run as the bank's evidence (the bank needs the harness stored first)."""
    return Outcome(harness_id=spec.id, task_id=task.id, task_text=task.prompt, reward=run.reward,
                   prompt_tokens=run.cost.prompt_tokens, completion_tokens=run.cost.completion_tokens,
                   wall_s=run.cost.wall_s, verdict=run.verdict[:500], cluster=cluster, task_type=task.type,
                   tags=tuple(task.tags), source="run", answer=run.answer, trace=last_steps(run),
                   delivery=delivery, run_id=run_id, solution=run.solution,
                   evidence=f"verifier:{task.verifier.kind}")


def last_steps(run: RunResult, steps: int = 3, limit: int = 400) -> str:
    """The run's last model and tool steps, trimmed: what a reflective mutation reads."""
    events = [e for e in run.trajectory.events if e.kind in ("model", "tool", "verify")][-steps:]
    return "\n".join(f"[{e.kind}{':' + e.tool if e.tool else ''}] {e.text[:limit]}" for e in events)
