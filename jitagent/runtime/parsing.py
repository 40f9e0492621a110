"""Reading actions and answers out of model text (small models are sloppy: be forgiving)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from jitagent.common.safe_loading import json_loads

FINAL = re.compile(r"(?:final\s*answer|answer)\s*[:：]\s*(.+)", re.I)
BOXED = re.compile(r"\\boxed\{([^}]*)\}")
ANY_FENCE = re.compile(r"```[^\n]*\n?.*?(?:```|$)", re.S)
CODE_BLOCK = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)(?:```|$)", re.S)
REACT_ACTION = re.compile(r"Action[ \t]*:[ \t]*([A-Za-z_]+)[ \t]*(?:\n+\s*Action\s*Input\s*:\s*(.*))?", re.S)


@dataclass
class ToolCall:
    tool: str
    args: dict | str


def extract_answer(text: str) -> str:
    """The answer a reply commits to: `Final answer: X`, `\\boxed{X}`, else the last non-empty line."""
    text = text or ""
    finals = FINAL.findall(text)
    if finals:
        return finals[-1].strip().strip("*").strip()
    boxed = BOXED.findall(text)
    if boxed:
        return boxed[-1].strip()
    lines = [ln.strip() for ln in text.strip().splitlines()
             if ln.strip() and not ln.strip().startswith("```")]
    return lines[-1] if lines else ""


def has_final(text: str) -> bool:
    return bool(re.search(r"final\s*answer\s*[:：]", text or "", re.I))


def code_blocks(text: str) -> list[str]:
    return [b.strip() for b in CODE_BLOCK.findall(text or "") if b.strip()]


def parse_react(text: str) -> ToolCall | None:
    match = REACT_ACTION.search(text or "")
    if not match:
        return None
    tool, raw = match.group(1).strip(), (match.group(2) or "").strip()
    raw = raw.split("\nObservation")[0].strip()
    return ToolCall(tool, raw)


def parse_json_tool(text: str) -> ToolCall | None:
    try:
        value = json_loads(text)
    except ValueError:  # not JSON, nested too deep, or an integer past Python's 4,300 digits
        match = re.search(r"\{.*\}", text or "", re.S)
        if not match:
            return None
        try:
            value = json_loads(match.group(0))
        except ValueError:
            return None
    if not isinstance(value, dict) or "tool" not in value:
        return None
    args = value.get("args", {})
    return ToolCall(str(value["tool"]), args if isinstance(args, (dict, str)) else str(args))


def json_tool_schema(tools: list[str]) -> dict:
    """One branch per tool, so the grammar also fixes each tool's argument names."""
    from jitagent.sandbox.tools import TOOL_SCHEMAS

    return {"anyOf": [{"type": "object", "properties": {
        "thought": {"type": "string"}, "tool": {"const": name}, "args": TOOL_SCHEMAS[name]["parameters"]},
        "required": ["thought", "tool", "args"]} for name in tools]}


def normalize_vote(answer: str) -> str:
    number = re.fullmatch(r"\s*-?[\d,]*\.?\d+\s*", answer or "")
    if number:
        value = float(answer.replace(",", ""))
        return str(int(value)) if value.is_integer() else str(value)
    return " ".join((answer or "").strip().casefold().split()).rstrip(".")


def first_int(text: str) -> int | None:
    found = re.findall(r"\d+", text or "")
    return int(found[0]) if found else None


def numbered_lines(text: str) -> list[str]:
    """Sub-questions from a numbered (or bulleted) list; falls back to non-empty lines.
    Fenced code is never a sub-question: a model that solves instead of splitting yields none."""
    lines = ANY_FENCE.sub("", text or "").splitlines()
    items = [re.sub(r"^\s*(?:\d+[.)]|[-*])\s*", "", ln).strip() for ln in lines]
    listed = [i for i, ln in zip(items, lines) if re.match(r"^\s*(?:\d+[.)]|[-*])\s", ln) and i]
    return listed or [i for i in items if i]
