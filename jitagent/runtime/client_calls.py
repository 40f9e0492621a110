"""The client's own functions in a run (`Task.client_tools`): described to the model (or handed to its own
chat template, `openai_tools`), read from its reply as leniently as serving stacks read calls, checked
against their JSON Schemas before they leave, and the pause at a call — the run ends there, and the client
sends the result back with the conversation."""

from __future__ import annotations

import ast
import json
import re

from jitagent.runtime.parsing import CODE_BLOCK, ToolCall, code_blocks, has_final, parse_react
from jitagent.tasks.conversation import before_results, calls_written, this_turn
from jitagent.tasks.task import ClientTool, referred

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


def openai_tools(tools: list[ClientTool]) -> list[dict]:
    """The functions in the shape a chat template and an OpenAI-compatible server take them."""
    return [{"type": "function", "function": tool.model_dump(exclude_none=True)} for tool in tools]


def _signature(tool: ClientTool) -> str:
    root = tool.parameters
    top = _followed(root, root)
    properties, required = top.get("properties", {}), top.get("required", [])
    properties = properties if isinstance(properties, dict) else {}
    required = required if isinstance(required, list) else []
    arguments = ", ".join(f"{name}: {_type(schema, root)}{'' if name in required else ' (optional)'}"
                          for name, schema in properties.items())
    meanings = [f"    {name}: {' '.join(str(schema['description']).split())}"  # one line each
                for name, schema in properties.items()
                if isinstance(schema, dict) and schema.get("description")]
    head = f"- {tool.name}({arguments})" + (f": {tool.description}" if tool.description else "")
    return "\n".join([head, *meanings])


def _type(schema, root: dict, depth: int = 0) -> str:
    """A JSON Schema as a short type: `"a" | "b"`, `array of integer`, `object {k: string}`, `string | null`;
    past a few levels (or a schema that refers to itself), `any`."""
    schema = _followed(schema, root)
    if depth > 3 or not isinstance(schema, dict):
        return "any"
    if isinstance(choices := schema.get("anyOf", schema.get("oneOf")), list):
        kind = " | ".join(_type(choice, root, depth + 1) for choice in choices)
    elif "const" in schema:
        kind = json.dumps(schema["const"])
    elif isinstance(schema.get("enum"), list):
        kind = " | ".join(json.dumps(value) for value in schema["enum"])
    else:
        kinds = schema.get("type", "any")
        kinds = kinds if isinstance(kinds, list) else [kinds]
        kind = " | ".join(_kind(k, schema, root, depth) for k in kinds)
    return kind + (f" = {json.dumps(schema['default'])}" if "default" in schema else "")


def _kind(kind, schema: dict, root: dict, depth: int) -> str:
    if kind == "array" and "items" in schema:
        return f"array of {_type(schema['items'], root, depth + 1)}"
    if kind == "object" and isinstance(schema.get("properties"), dict) and schema["properties"]:
        return "object {" + ", ".join(f"{k}: {_type(v, root, depth + 1)}"
                                      for k, v in schema["properties"].items()) + "}"
    return kind if isinstance(kind, str) else "any"


def _followed(schema, root: dict, hops: int = 8):
    """`schema` with its `$ref`s to the schema's own definitions (`#/...`, all the task accepts) followed."""
    while hops and isinstance(schema, dict) and isinstance(ref := schema.get("$ref"), str):
        schema, hops = referred(ref, root), hops - 1
    return schema if isinstance(schema, dict) else {}


def schema(tools: list[ClientTool]) -> dict:
    """A reply that is one call of one of `tools`: the grammar a forced call (tool_choice) decodes under."""
    return {"anyOf": [{"type": "object", "properties": {"tool": {"const": t.name}, "args": t.parameters},
                       "required": ["tool", "args"]} for t in tools]}


def read(reply: str, tools: list[ClientTool], said: str = "") -> list[ToolCall]:
    """The calls of `tools` a reply makes: JSON objects {tool|name, args|arguments|parameters} (or OpenAI's
    {"function": {...}}), one or a list, anywhere in it (in <tool_call> tags, fenced or bare); else a ReAct
    `Action:` that names one; else, unless the reply gives its final answer, calls in the notation a
    conversation shows earlier calls in, `called name({...})` (a model shown it answers in it), up to the
    first line that shows a result (one the reply made up: a call after it would act on it), less those the
    conversation so far (`said`) shows since the user last spoke, as sent (the reply restating them); else
    calls written as Python, `name(3, unit="m")` (`python_calls`). An object that names no client tool is no
    call."""
    names = {t.name for t in tools}
    calls = [call for value in json_values(reply) for item in (value if isinstance(value, list) else [value])
             if (call := _as_call(item, names)) is not None]
    if not calls and (react := parse_react(reply)) is not None and react.tool in names:
        args = next(iter(json_values(react.args)), react.args) if isinstance(react.args, str) else react.args
        calls.append(ToolCall(react.tool, args))
    if not calls and not has_final(reply):
        sent = [ToolCall(name, args) for name, args in calls_written(this_turn(said))]
        written = [ToolCall(name, args) for name, args in calls_written(before_results(reply))
                   if name in names]
        calls = [call for call in written if repaired(call, tools) not in sent]
    return calls or python_calls(reply, tools)


def python_calls(text: str, tools: list[ClientTool]) -> list[ToolCall]:
    """Calls written as Python — in a program, or on a line that is only calls (`[f(a=1), g(2)]`, the form
    vLLM's `pythonic` parser reads) — in the order written. One in a string, a comment or a `def` is no
    call; nor is one whose arguments are not all literals (a variable, another call): nothing could be sent
    for it. Positional arguments take the schema's order. A reply that gives its final answer makes none:
    it may restate the call it answered from."""
    if has_final(text):
        return []
    parameters = {t.name: list(_followed(t.parameters, t.parameters).get("properties", {})) for t in tools}
    sources = code_blocks(text) + CODE_BLOCK.sub("\n", text).splitlines()
    return [call for source in sources for call in _calls_in(source, parameters)]


def _calls_in(source: str, parameters: dict[str, list[str]]) -> list[ToolCall]:
    try:
        tree = ast.parse(source.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # prose, or not a whole program
        return []
    nodes = sorted((node for node in ast.walk(tree) if isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name) and node.func.id in parameters),
                   key=lambda node: (node.lineno, node.col_offset))
    return [call for node in nodes if (call := _literal_call(node, parameters[node.func.id])) is not None]


def _literal_call(node: ast.Call, names: list[str]) -> ToolCall | None:
    """The call's arguments as JSON values, or None where one is not a literal JSON can hold."""
    positional, keywords = dict(zip(names, node.args)), {k.arg: k.value for k in node.keywords}
    if len(node.args) > len(names) or None in keywords or positional.keys() & keywords.keys():
        return None  # too many, `**kwargs`, or one given twice: Python itself would refuse it
    try:
        args = {name: ast.literal_eval(value) for name, value in (positional | keywords).items()}
        return ToolCall(node.func.id, json.loads(json.dumps(args, allow_nan=False)))  # tuples as lists
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return None  # a variable, an expression, a set or bytes


def repaired(call: ToolCall, tools: list[ClientTool]) -> ToolCall:
    """`call` with its arguments unwrapped where a small model wrote them in the schema's own shape
    (`{"type": "object", "properties": {"order_id": "A-1"}}`, the shape of the functions it was shown) and
    the function takes no such arguments; then without those its schema forbids (`additionalProperties:
    false`): a small model adds made-up ones to an otherwise good call."""
    parameters = next(t.parameters for t in tools if t.name == call.tool)
    args, known = call.args, _followed(parameters, parameters).get("properties", {})
    if not isinstance(args, dict):
        return call
    if (args.get("type") == "object" and isinstance(args.get("properties"), dict)
            and set(args) <= {"type", "properties", "required"} and not {"type", "properties"} & set(known)):
        args = args["properties"]
    if parameters.get("additionalProperties", True) is False:
        args = {k: v for k, v in args.items() if k in known}
    return ToolCall(call.tool, args)


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
