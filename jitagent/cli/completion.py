"""`jitagent completion bash|zsh`: a shell completion script for every command and option, generated
from the parser itself (shtab), so it never falls behind the command line.

    jitagent completion bash > ~/.local/share/bash-completion/completions/jitagent
    jitagent completion zsh > "${fpath[1]}/_jitagent"
"""

from __future__ import annotations

import argparse

from jitagent.cli.common import common

SHELLS = ("bash", "zsh")


def add_commands(sub, parser: argparse.ArgumentParser) -> None:
    p = sub.add_parser("completion", help="print a shell completion script (bash or zsh)", parents=[common()])
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in")

    def cmd_completion(args) -> int:
        import shtab

        print(shtab.complete(parser, shell=args.shell, root_prefix="jitagent"))
        return 0
    p.set_defaults(func=cmd_completion)
