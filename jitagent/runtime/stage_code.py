"""Run a harness `code` section's stage function — only ever inside the sandbox: once on a run's
input (`call_stage`), or on many inputs in one sandboxed process, each call with its own time limit and
its own failure (`call_stage_each`, how code written for a cluster is tried on the cluster's tasks)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from jitagent.common.safe_loading import NestingError, json_loads
from jitagent.harness.spec import CODE_INTERFACES, CodeSection
from jitagent.sandbox.launch import SandboxLimits, Workspace, sandbox_python

_CALLER = """
import json as _json, sys as _sys
_args = _json.loads(_sys.stdin.read())
_out = {func}(**_args)
print("\\n__STAGE_RESULT__" + _json.dumps(_out))
"""


_EACH = """
import json as _json, signal as _signal, sys as _sys
def _late(*_):
    raise TimeoutError("took over {per_call_s:g} s")
_signal.signal(_signal.SIGALRM, _late)
_results = []
for _args in _json.loads(_sys.stdin.read()):
    try:
        _signal.setitimer(_signal.ITIMER_REAL, {per_call_s})
        _value = {func}(**_args)
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        _results.append({{"value": None if _value is None else str(_value)[:{cap}]}})
    except BaseException as _exc:
        _signal.setitimer(_signal.ITIMER_REAL, 0)
        _results.append({{"error": type(_exc).__name__ + ": " + str(_exc)[:300]}})
print("\\n__STAGE_RESULTS__" + _json.dumps(_results))
"""
VALUE_CAP = 2000  # characters of one call's result kept: an answer, not a dump


@dataclass(frozen=True, kw_only=True)
class StageCall:
    """One call's result: `value` (None: the function returned None), or why it failed."""

    value: str | None = None
    error: str | None = None


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


async def call_stage_each(code: CodeSection, inputs: list[dict], workspace: Workspace, *,
                          per_call_s: float = 2.0, deadline: float | None = None) -> list[StageCall]:
    """The stage function on each input, in one sandboxed process; a call that raises or runs past
    `per_call_s` fails alone. If the process itself fails (a syntax error, an import that hangs, output
    past the bound), every call fails with what it printed."""
    func, _ = CODE_INTERFACES[code.stage]
    program = code.source + "\n" + _EACH.format(func=func, per_call_s=per_call_s, cap=VALUE_CAP)
    seconds = per_call_s * len(inputs) + 5
    limits = SandboxLimits(wall_s=min(seconds, 600), cpu_s=min(math.ceil(seconds), 600),
                           output_bytes=min(1_000_000, (VALUE_CAP + 100) * len(inputs) + 8000))
    result = await workspace.run([sandbox_python(), "-c", program], limits, stdin=json.dumps(inputs),
                                 deadline=deadline)
    marker = "__STAGE_RESULTS__"
    try:
        calls = json_loads(result.stdout.rsplit(marker, 1)[1]) if marker in result.stdout else None
    except (json.JSONDecodeError, NestingError):
        calls = None
    if not isinstance(calls, list) or len(calls) != len(inputs):
        error = f"code section `{func}` failed in the sandbox: {result.describe()[-500:]}"
        return [StageCall(error=error)] * len(inputs)
    return [StageCall(value=c.get("value"), error=c.get("error")) for c in calls]
