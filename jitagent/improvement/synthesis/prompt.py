"""The synthesis prompt (its text: seeds/synthesis_prompts.yaml). Order matters for prefix caching (vLLM,
llama.cpp reuse whole KV blocks): the fixed system text and protocol first, byte-identical on every request;
then the references; the task last."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Literal

from jitagent.harness.seeds import shipped_prompts
from jitagent.harness.spec import HarnessSpec
from jitagent.sandbox.tools import TOOL_SCHEMAS

PROMPTS = shipped_prompts("synthesis")
SYSTEM = PROMPTS["system"].format(tools="\n".join(f"- {name}: {schema['description']}"
                                                   for name, schema in TOOL_SCHEMAS.items()))
REPAIR = PROMPTS["repair"]


# what a reference's one-line summary shows of its fields, by name
SUMMARY: dict[str, Callable[[HarnessSpec], object]] = {
    "action": lambda r: r.action.kind, "answer_from": lambda r: r.action.answer_from,
    "planning": lambda r: r.planning.kind, "tools": lambda r: r.tools.tools,
    "max_steps": lambda r: r.limits.max_steps}
# the summary's markup, which a harness that copies this prompt carries into its own text
SUMMARY_MARKUP = re.compile(r"\b(?:" + "|".join(SUMMARY) + r")=")


def summary(spec: HarnessSpec) -> str:
    return ", ".join(f"{key}={field(spec)}" for key, field in SUMMARY.items())


def reference_block(references: list[HarnessSpec], mode: Literal["descriptions", "full"]) -> str:
    if mode == "full":
        body = "\n\n".join(json.dumps(r.content(), separators=(",", ":")) for r in references)
    else:
        body = "\n".join(f"- {r.name}: {r.description} [{summary(r)}]" for r in references)
    return f"Reference harnesses:\n{body}"


def failure_block(failures: list[dict], limit: int = 300) -> str:
    """Raw traces, trimmed (Meta-Harness: a proposer that reads traces beats one that reads scores);
    of the last steps the end is kept, where the run went wrong."""
    def trim(text, tail: bool = False) -> str:
        text = " ".join(str(text or "").split())
        if len(text) <= limit:
            return text
        return "… " + text[-limit:] if tail else text[:limit] + " …"
    items = [f"{i}. Task: {trim(f['task_text'])}\n   Answer: {trim(f['answer']) or '(none)'}\n"
             f"   Verdict: {trim(f['verdict'])}\n   Last steps: {trim(f['trace'], tail=True) or '(none)'}"
             for i, f in enumerate(failures, 1)]
    return "Recent failures of this reference on tasks like this one:\n" + "\n".join(items)


def synthesis_messages(task_text: str, allowed_tools: list[str], references: list[HarnessSpec],
                       mode: Literal["descriptions", "full"] = "descriptions",
                       failures: list[dict] | None = None) -> list[dict]:
    user = (f"{reference_block(references, mode)}\n\n"
            + (f"{failure_block(failures)}\n\n" if failures else "")
            + f"Tools this task allows: {allowed_tools}\n\nTask:\n{task_text}\n\n"
            "Design the harness for this task.")
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def repair_messages(base: list[dict], broken_output: str, error: str) -> list[dict]:
    return base + [{"role": "assistant", "content": broken_output},
                   {"role": "user", "content": REPAIR.format(error=error)}]
