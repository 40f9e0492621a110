"""Run a harness `code` section's stage function — only ever inside the sandbox."""

from __future__ import annotations

import json

from jitagent.nesting import NestingError, json_loads
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


async def call_stage(code: CodeSection, args: dict, workspace: Workspace, limits: SandboxLimits | None = None,
                     deadline: float | None = None):
    func, _ = CODE_INTERFACES[code.stage]  # the spec checked that the source defines it
    program = code.source + "\n" + _CALLER.format(func=func)
    limits = limits or SandboxLimits(wall_s=5, cpu_s=5)
    result = await workspace.run([sandbox_python(), "-c", program], limits,
                                 stdin=json.dumps(args), deadline=deadline)
    marker = "__STAGE_RESULT__"
    if not result.ok or marker not in result.stdout:
        raise StageCodeError(f"code section `{func}` failed in the sandbox:\n{result.describe()[-1500:]}")
    try:
        return json_loads(result.stdout.rsplit(marker, 1)[1])
    except (json.JSONDecodeError, NestingError) as exc:  # e.g. cut short by the output bound
        raise StageCodeError(f"code section `{func}` returned what is not JSON: {exc}") from None
