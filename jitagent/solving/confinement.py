"""Code runs only where it is confined (issue 45). Without root or bwrap a run is the server's own uid with
no namespaces: a client's verifier, or a program a model wrote from a client's prompt, could read the
server's `/proc/*/environ` (its tokens, API keys, PGPASSWORD) and the bank. There the solving layer refuses
a task whose verifier runs code, takes the tools that run code out of the task's, and writes no code for
clusters — unless the operator says otherwise (`--allow-unconfined`)."""

from __future__ import annotations

from jitagent.sandbox.host import is_root
from jitagent.sandbox.launch import bwrap_works
from jitagent.sandbox.tools import TOOL_NAMES
from jitagent.tasks.task import Task

CODE_TOOLS = frozenset({"python", "shell"})
CODE_VERIFIERS = frozenset({"python_tests", "shell_check"})
ALLOW_UNCONFINED = (f"run code where runs cannot be confined (not root, or no working bwrap): tools "
                    f"{' and '.join(sorted(CODE_TOOLS))}, verifiers {' and '.join(sorted(CODE_VERIFIERS))}, "
                    f"code written for clusters; a run is then the server's own uid and may read its secrets")


def confined() -> bool:
    """Whether runs are confined here: root (a uid of their own, cgroups) and bwrap (namespaces)."""
    return is_root() and bwrap_works()


def refusal(task: Task) -> str | None:
    """Why an unconfined server does not take `task`; None where it may, without its code tools."""
    if task.verifier.kind in CODE_VERIFIERS:
        return (f"task {task.id}: its verifier ({task.verifier.kind}) runs code, and this server cannot "
                f"confine runs (not root, or no working bwrap); the operator may allow it "
                f"(serve --allow-unconfined)")
    return None


def without_code_tools(task: Task) -> Task:
    """The task with the tools that run code taken out of those it allows."""
    allowed = [t for t in (TOOL_NAMES if task.tools is None else task.tools) if t not in CODE_TOOLS]
    return task.model_copy(update={"tools": allowed})
