"""The compact form the meta-model writes: an edit of a retrieved reference harness.

~60-120 tokens instead of ~500 for a whole spec: on CPU the meta-model's tokens are the cost
that dominates. `build_spec` turns an edit into a full HarnessSpec. A whole spec (code
sections included) stays possible through `{"spec": {...}}` where an edit cannot express it.
"""

from __future__ import annotations

import hashlib
import json
from typing import get_args

from pydantic import BaseModel, ConfigDict, Field

from jitagent.harness.spec import ActionSpec, HarnessSpec, PlanningSpec, parse_spec

# the kinds an edit may pick are the spec's own: a new kind is offered as soon as the spec has it
ActionKind = ActionSpec.model_fields["kind"].annotation
AnswerFrom = ActionSpec.model_fields["answer_from"].annotation
PlanningKind = PlanningSpec.model_fields["kind"].annotation


class HarnessEdit(BaseModel):
    """What the schema below lets the meta-model write; every field it offers, and only those."""

    model_config = ConfigDict(extra="forbid")

    parent: str = Field(..., description="name of the reference harness to start from")
    action: ActionKind | None = None
    answer_from: AnswerFrom | None = None
    planning: PlanningKind | None = None
    tools: list[str] | None = None
    max_steps: int | None = None
    instruction: str = Field("", description="one line added to the system prompt")


def edit_schema(parents: list[str], tools: list[str]) -> dict:
    """JSON schema for constrained decoding: enums keep the grammar (and the tokens) small."""
    return {
        "type": "object",
        "properties": {
            "parent": {"type": "string", "enum": parents},
            "action": {"type": "string", "enum": list(get_args(ActionKind))},
            "answer_from": {"type": "string", "enum": list(get_args(AnswerFrom))},
            "planning": {"type": "string", "enum": list(get_args(PlanningKind))},
            "tools": {"type": "array", "items": {"type": "string", "enum": tools}, "maxItems": len(tools)},
            "max_steps": {"type": "integer", "minimum": 1, "maximum": 8},
            "instruction": {"type": "string", "maxLength": 160},
        },
        "required": ["parent", "action", "answer_from", "planning", "tools", "max_steps"],
        "additionalProperties": False,
    }


def full_spec_schema() -> dict:
    return {"type": "object", "properties": {"spec": HarnessSpec.model_json_schema()}, "required": ["spec"]}


VARIANT = " Variant: "
INSTRUCTION = " Instruction: "


def build_spec(edit: HarnessEdit, parent: HarnessSpec) -> HarnessSpec:
    """Apply an edit to its parent; raises SpecError naming the field if the result is invalid.
    The name is the root seed's plus a short hash of the behaviour, and the description the root's
    plus this variant's summary: lineage lives in the envelope, so it never lengthens a name or a
    synthesis prompt. The same edit made for two tasks is one harness (same content digest)."""
    data = parent.model_dump(mode="json")
    if edit.action:
        data["action"]["kind"] = edit.action
    if edit.answer_from:
        data["action"]["answer_from"] = edit.answer_from
    if edit.planning:
        data["planning"]["kind"] = edit.planning
    if edit.tools is not None:
        data["tools"]["tools"] = list(edit.tools)
        if data["tools"].get("required_first") not in edit.tools:
            data["tools"]["required_first"] = None
    if edit.max_steps is not None:
        data["limits"]["max_steps"] = edit.max_steps
    if edit.instruction.strip() and edit.instruction.strip() not in data["prompts"]["instructions"]:
        data["prompts"]["instructions"] = [*data["prompts"]["instructions"], edit.instruction.strip()]
    data["envelope"] = {}
    a, p, t = data["action"], data["planning"], data["tools"]["tools"]
    behaviour = {k: v for k, v in data.items() if k not in ("name", "description", "envelope")}
    digest = hashlib.sha256(json.dumps(behaviour, sort_keys=True).encode()).hexdigest()
    data["name"] = f"{root_name(parent.name)}~{digest[:6]}"
    instruction = f"{INSTRUCTION}{edit.instruction.strip()}" if edit.instruction.strip() else ""
    data["description"] = (f"{parent.description.split(VARIANT)[0]}{VARIANT}action {a['kind']} (answer from "
                           f"{a['answer_from']}), planning {p['kind']}, memory {data['memory']['kind']}, "
                           f"tools {t or 'none'}, max_steps {data['limits']['max_steps']}." + instruction)
    return parse_spec(data)


def root_name(name: str) -> str:
    """The seed a harness descends from, read off its name (`program_of_thought~3fa9c1`)."""
    return name.split("~")[0].split("/")[0]
