"""`jitagent tokens add FILE --tenant T [--role client|operator]`: a new bearer token for a tenant, kept
in the tokens file a server reads (`serve --tokens-file FILE`) only as its SHA-256. The token is printed
once, to give to the tenant; nothing else holds it."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

from jitagent.cli.common import common
from jitagent.cli.options import USAGE, Failure
from jitagent.solving.access import EVIDENCE, AccessError, Grant, Role, add_token


def cmd_tokens_add(args) -> int:
    try:
        token = add_token(args.file, args.tenant, args.role, args.pool, args.teaches)
    except AccessError as exc:
        raise Failure(str(exc), USAGE) from None
    print(token)
    return 0


def add_commands(sub) -> None:
    tokens = sub.add_parser("tokens", help="bearer tokens of tenants and roles (serve --tokens-file)",
                            parents=[common()]).add_subparsers(dest="tokens_command", required=True)
    add = tokens.add_parser("add", help="a new token for a tenant, printed once and stored hashed",
                            parents=[common()])
    add.add_argument("file", type=Path, help="the tokens file (made if absent)")
    add.add_argument("--tenant", required=True, help="whose traffic the token's calls are (a-z 0-9 . _ -)")
    add.add_argument("--role", choices=get_args(Role), default="client",
                     help="client: solves and reports on its own runs; operator: also rolls back, reports "
                          "free-form (default: client)")
    add.add_argument("--pool", help="a memory shared with the other tenants that name it: each learns from "
                                    "the others' verified runs (default: the tenant's own)")
    add.add_argument("--teaches", nargs="+", choices=EVIDENCE, metavar="EVIDENCE",
                     help=Grant.model_fields["teaches"].description)
    add.set_defaults(func=cmd_tokens_add)
