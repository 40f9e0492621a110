"""The tool registry: each tool has a JSON schema; code and shell run only in the sandbox."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass

from jitagent.sandbox.launch import SandboxLimits, Workspace, sandbox_python

TOOL_SCHEMAS: dict[str, dict] = {
    "python": {"description": "Run a Python 3 program in the task workspace; returns what it prints.",
               "parameters": {"type": "object", "properties": {"code": {"type": "string"}},
                              "required": ["code"]}},
    "shell": {"description": "Run a POSIX shell command in the task workspace; returns its output.",
              "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                             "required": ["command"]}},
    "read_file": {"description": "Read a text file from the workspace.",
                  "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                 "required": ["path"]}},
    "write_file": {"description": "Write a text file in the workspace (creates directories).",
                   "parameters": {"type": "object",
                                  "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                                  "required": ["path", "content"]}},
    "list_dir": {"description": "List a directory of the workspace.",
                 "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                                "required": []}},
    "final_answer": {"description": "Give the final answer and stop.",
                     "parameters": {"type": "object", "properties": {"answer": {"type": "string"}},
                                    "required": ["answer"]}},
}
TOOL_NAMES = tuple(TOOL_SCHEMAS)

READ_LIMIT = 8000
LIST_LIMIT = 500
log = logging.getLogger("jitagent.sandbox.tools")


class ToolError(Exception):
    """A tool call the tool itself rejected (bad arguments, content over the file-size limit)."""


@dataclass
class ToolResult:
    output: str
    ok: bool
    wall_s: float = 0.0
    stdout: str = ""  # raw stdout of a program run (answer_from: stdout reads it)
    killed: bool = False  # a program run the sandbox stopped (a limit, a signal): worth repeating


def describe_tools(names: list[str]) -> str:
    return "\n".join(f"- {n}({', '.join(TOOL_SCHEMAS[n]['parameters']['properties'])}): "
                     f"{TOOL_SCHEMAS[n]['description']}"
                     for n in names)


class ToolBox:
    """The tools a harness may call, bound to one task's workspace and limits."""

    def __init__(self, workspace: Workspace, allowed: list[str], limits: SandboxLimits | None = None):
        self.workspace = workspace
        self.allowed = list(allowed)
        self.limits = limits or SandboxLimits()

    async def call(self, name: str, args: dict | str, deadline: float | None = None) -> ToolResult:
        if name not in self.allowed:
            return ToolResult(f"error: tool {name!r} is not available; available: {self.allowed}", ok=False)
        if isinstance(args, str):
            args = _coerce_args(name, args)
        # Whatever a call meets is the task's failure, told to the model, never the server's: no
        # exception leaves, and no message names a host path (a PathError names the task's own path).
        try:
            return await getattr(self, f"_{name}")(deadline=deadline, **args)
        except (ToolError, ValueError) as exc:
            return ToolResult(f"error: {name}: {exc}", ok=False)
        except OSError as exc:  # its file name would be a host path
            return ToolResult(f"error: {name}: {exc.strerror or type(exc).__name__}", ok=False)
        except TypeError as exc:
            return ToolResult(f"error: bad arguments for {name}: {exc}; schema: "
                              f"{json.dumps(TOOL_SCHEMAS[name]['parameters'])}", ok=False)
        except Exception:
            log.exception("tool %s failed", name)
            return ToolResult(f"error: {name}: failed inside the server (it logged why)", ok=False)

    async def _python(self, code: str, deadline: float | None = None) -> ToolResult:
        result = await self.workspace.run([sandbox_python(), "-c", code], self.limits, deadline=deadline)
        return ToolResult(result.describe(), ok=result.ok, wall_s=result.wall_s, stdout=result.stdout,
                          killed=result.killed)

    async def _shell(self, command: str, deadline: float | None = None) -> ToolResult:
        result = await self.workspace.run(["/bin/sh", "-c", command], self.limits, deadline=deadline)
        return ToolResult(result.describe(), ok=result.ok, wall_s=result.wall_s, stdout=result.stdout,
                          killed=result.killed)

    # File tools run in a worker thread: what a run left in the workspace never stalls the server.
    async def _read_file(self, path: str, deadline: float | None = None) -> ToolResult:
        text, cut = await asyncio.to_thread(self.workspace.read_text, path, READ_LIMIT)
        return ToolResult(text + ("\n[truncated]" if cut else ""), ok=True)

    async def _write_file(self, path: str, content: str, deadline: float | None = None) -> ToolResult:
        if len(content.encode()) > self.limits.file_mb << 20:
            raise ToolError(f"content exceeds the file-size limit of {self.limits.file_mb} MB")
        await asyncio.to_thread(self.workspace.write, path, content)
        return ToolResult(f"wrote {len(content)} characters to {path}", ok=True)

    async def _list_dir(self, path: str = ".", deadline: float | None = None) -> ToolResult:
        names, count = await asyncio.to_thread(self.workspace.list_names, path, LIST_LIMIT)
        more = f"\n[{count - len(names)} more]" if count > len(names) else ""
        return ToolResult("\n".join(names) + more or "(empty)", ok=True)

    async def _final_answer(self, answer: str, deadline: float | None = None) -> ToolResult:
        return ToolResult(str(answer), ok=True)


def _coerce_args(name: str, raw: str) -> dict:
    """Small models often give a bare string where an object was asked: map it to the one required field."""
    raw = raw.strip()
    if raw.startswith("{"):
        try:
            value = json.loads(raw)
            if isinstance(value, dict):
                return value
        except ValueError:  # not JSON, or an integer past Python's 4,300 digits
            pass
    props = list(TOOL_SCHEMAS[name]["parameters"]["properties"])
    if not props:
        return {}
    return {props[0]: raw.strip("`").removeprefix("python\n") if name == "python" else raw}
