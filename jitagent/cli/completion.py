"""`jitagent completion bash|zsh`: a shell completion script for every command and option, generated
from the parser itself (shtab), so it never falls behind the command line. Where it goes (the docs and
the script's own header say the same: INSTALL):

    jitagent completion bash > ~/.local/share/bash-completion/completions/jitagent
    jitagent completion zsh > "${fpath[1]}/_jitagent"
"""

from __future__ import annotations

import argparse

from jitagent.cli.common import common

SHELLS = ("bash", "zsh")
INSTALL = {"bash": "jitagent completion bash > ~/.local/share/bash-completion/completions/jitagent",
           "zsh": 'jitagent completion zsh > "${fpath[1]}/_jitagent"'}


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    """shtab's script with its usage comment (another install path than ours) replaced by INSTALL's."""
    import shtab

    lines = shtab.complete(parser, shell=shell, root_prefix="jitagent").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# Usage:"))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("#"))
    return "\n".join([*lines[:start], f"# Install: {INSTALL[shell]}", *lines[end:]])


def add_commands(sub, parser: argparse.ArgumentParser) -> None:
    p = sub.add_parser("completion", help="print a shell completion script (bash or zsh)", parents=[common()])
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")

    def cmd_completion(args) -> int:
        print(script(parser, args.shell))
        return 0
    p.set_defaults(func=cmd_completion)
