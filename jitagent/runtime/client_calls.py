"""The client's own functions in a run (`Task.client_tools`): described to the model, read from its reply
as leniently as serving stacks read calls, checked against their JSON Schemas before they leave, and the
pause at a call — the run ends there, and the client sends the result back with the conversation."""

from __future__ import annotations

import ast
import json
import re

from jitagent.runtime.parsing import ToolCall, parse_react
from jitagent.tasks.task import ClientTool

OPENING = re.compile(r"[\[{]")
NAME_KEYS, ARGS_KEYS = ("tool", "name"), ("args", "arguments", "parameters")


class ClientCalls(Exception):
    """The run pauses: these calls go to the client, whose results come back with the next request."""

    def __init__(self, calls: list[ToolCall]):
        super().__init__(", ".join(c.tool for c in calls))
        self.calls = calls


def describe(tools: list[ClientTool]) -> str:
    """Each function as a signature, then what each argument means: a small model shown the schemas'
    JSON copies them as its arguments ({"x": {"type": "integer"}} for x=3)."""
    return "\n".join(_signature(tool) for tool in tools)


def _signature(tool: ClientTool) -> str:
    properties, required = tool.parameters.get("properties", {}), tool.parameters.get("required", [])
    arguments = ", ".join(f"{name}: {_type(schema)}{'' if name in required else ' (optional)'}"
                          for name, schema in properties.items())
    meanings = [f"    {name}: {schema['description']}" for name, schema in properties.items()
                if isinstance(schema, dict) and schema.get("description")]
    return "\n".join([f"- {tool.name}({arguments}): {tool.description}".rstrip(": "), *meanings])


def _type(schema) -> str:
    """A JSON Schema as a short type: `"a" | "b"`, `array of integer`, `object {k: string}`."""
    if not isinstance(schema, dict):
        return "any"
    kind = schema.get("type", "any")
    kind = " | ".join(kind) if isinstance(kind, list) else kind
    if "enum" in schema:
        kind = " | ".join(json.dumps(value) for value in schema["enum"])
    elif kind == "array" and "items" in schema:
        kind = f"array of {_type(schema['items'])}"
    if kind == "object" and schema.get("properties"):
        kind = "object {" + ", ".join(f"{k}: {_type(v)}" for k, v in schema["properties"].items()) + "}"
    return kind + (f" = {json.dumps(schema['default'])}" if "default" in schema else "")


def schema(tools: list[ClientTool]) -> dict:
    """A reply that is one call of one of `tools`: the grammar a forced call (tool_choice) decodes under."""
    return {"anyOf": [{"type": "object", "properties": {"tool": {"const": t.name}, "args": t.parameters},
                       "required": ["tool", "args"]} for t in tools]}


def read(reply: str, tools: list[ClientTool]) -> list[ToolCall]:
    """The calls of `tools` a reply makes: JSON objects {tool|name, args|arguments|parameters} (or OpenAI's
    {"function": {...}}), one or a list, anywhere in it (in <tool_call> tags, fenced or bare); else a ReAct
    `Action:` that names one; else Python calls `name(3, unit="m")` with literal arguments, in code or
    text (as vLLM's `pythonic` parser reads them). An object that names no client tool is no call."""
    names = {t.name for t in tools}
    calls = [call for value in json_values(reply) for item in (value if isinstance(value, list) else [value])
             if (call := _as_call(item, names)) is not None]
    if not calls and (react := parse_react(reply)) is not None and react.tool in names:
        args = next(iter(json_values(react.args)), react.args) if isinstance(react.args, str) else react.args
        calls.append(ToolCall(react.tool, args))
    return calls or python_calls(reply, tools)


def python_calls(text: str, tools: list[ClientTool]) -> list[ToolCall]:
    """Calls written as Python, in the order written; one whose arguments are not all literals (a variable,
    another call) is no call: nothing could be sent for it. Positional arguments take the schema's order."""
    by_name = {t.name: list(t.parameters.get("properties", {})) for t in tools}
    if not by_name:
        return []
    found = re.finditer(r"(?<![\w.])(" + "|".join(map(re.escape, by_name)) + r")\s*\(", text)
    return [call for match in found if (call := _python_call(text, match, by_name)) is not None]


def _python_call(text: str, match: re.Match, by_name: dict[str, list[str]]) -> ToolCall | None:
    """The shortest `name(...)` from `match` that parses as one call, its arguments evaluated."""
    for end in (m.end() for m in re.finditer(r"\)", text[match.end():])):
        try:
            node = ast.parse(text[match.start():match.end() + end].strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
        if not isinstance(node, ast.Call):
            return None
        names = by_name[match.group(1)]
        try:
            if len(node.args) > len(names) or any(k.arg is None for k in node.keywords):
                return None
            args = {name: ast.literal_eval(value) for name, value in zip(names, node.args)}
            args |= {k.arg: ast.literal_eval(k.value) for k in node.keywords}
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            return None  # not literals: a variable, an expression, another call
        return ToolCall(match.group(1), args)
    return None


def repaired(call: ToolCall, tools: list[ClientTool]) -> ToolCall:
    """`call` without the arguments its schema forbids (`additionalProperties: false`): a small model adds
    made-up ones to an otherwise good call."""
    parameters = next(t.parameters for t in tools if t.name == call.tool)
    if not isinstance(call.args, dict) or parameters.get("additionalProperties", True) is not False:
        return call
    known = parameters.get("properties", {})
    return ToolCall(call.tool, {k: v for k, v in call.args.items() if k in known})


def problem(call: ToolCall, tools: list[ClientTool]) -> str | None:
    """Why `call` cannot be sent (arguments that are not an object, or break the tool's schema), or None."""
    from jsonschema import validators

    if not isinstance(call.args, dict):
        return f"{call.tool}: the arguments are not a JSON object"
    parameters = next(t.parameters for t in tools if t.name == call.tool)
    errors = sorted(validators.validator_for(parameters)(parameters).iter_errors(call.args),
                    key=lambda e: list(e.path))
    if not errors:
        return None
    where = ".".join(str(p) for p in errors[0].path)
    return f"{call.tool}: {where + ': ' if where else ''}{errors[0].message}"


def json_values(text: str) -> list:
    """Every JSON object or array in `text`, outermost first, in order."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while (start := OPENING.search(text, at)) is not None:
        try:
            value, at = decoder.raw_decode(text, start.start())
        except (ValueError, RecursionError):  # nested past the parser's depth: no value a call could be
            at = start.start() + 1
            continue
        values.append(value)
    return values


def _as_call(item, names: set[str]) -> ToolCall | None:
    if isinstance(item, dict) and isinstance(item.get("function"), dict):
        item = item["function"]
    if not isinstance(item, dict):
        return None
    name = next((item[k] for k in NAME_KEYS if isinstance(item.get(k), str)), None)
    if name not in names:
        return None
    args = next((item[k] for k in ARGS_KEYS if k in item), {})
    if isinstance(args, str):
        args = next((v for v in json_values(args) if isinstance(v, dict)), args)
    return ToolCall(name, args)
