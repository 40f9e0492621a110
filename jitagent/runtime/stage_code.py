"""Run a harness `code` section's stage function — only ever inside the sandbox."""

from __future__ import annotations

import ast
import json

from jitagent.sandbox import SandboxLimits, Workspace, sandbox_python
from jitagent.spec import CODE_INTERFACES, CodeSection

_CALLER = """
import json as _json, sys as _sys
_args = _json.loads(_sys.stdin.read())
_out = {func}(**_args)
print("\\n__STAGE_RESULT__" + _json.dumps(_out))
"""


class StageCodeError(Exception):
    """The code section failed a check or raised; the message carries the exact error."""


def check_interface(code: CodeSection) -> None:
    """Parse the source and check it defines the stage function with the right parameters."""
    func, params = CODE_INTERFACES[code.stage]
    try:
        tree = ast.parse(code.source)
    except SyntaxError as exc:
        raise StageCodeError(f"code.source: SyntaxError: {exc.msg} (line {exc.lineno}, column {exc.offset})") from None
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if func not in defs:
        raise StageCodeError(f"code.source: stage {code.stage!r} must define `def {func}({', '.join(params)})`; "
                             f"found functions {sorted(defs) or 'none'}")
    got = tuple(a.arg for a in defs[func].args.args)
    if got != params:
        raise StageCodeError(f"code.source: `{func}` must take parameters {params}, it takes {got}")


async def call_stage(code: CodeSection, args: dict, workspace: Workspace, limits: SandboxLimits | None = None,
                     deadline: float | None = None):
    check_interface(code)
    func, _ = CODE_INTERFACES[code.stage]
    program = code.source + "\n" + _CALLER.format(func=func)
    result = await workspace.run([sandbox_python(), "-c", program], limits or SandboxLimits(wall_s=5, cpu_s=5),
                                 stdin=json.dumps(args), deadline=deadline)
    marker = "__STAGE_RESULT__"
    if not result.ok or marker not in result.stdout:
        raise StageCodeError(f"code section `{func}` failed in the sandbox:\n{result.describe()[-1500:]}")
    return json.loads(result.stdout.rsplit(marker, 1)[1])
