"""`jitagent mcp`: serve the pipeline over the Model Context Protocol (jitagent.doors.mcp), over stdio or,
with --http-port, streamable HTTP."""

from __future__ import annotations

import sys

from jitagent.cli import settings
from jitagent.cli.common import (
    TOKEN_ENV,
    USAGE,
    Failure,
    api_key,
    bank,
    bank_location,
    common,
    models,
    secret_from,
    synthesis_config,
)
from jitagent.solving.access import Access, AccessError
from jitagent.solving.layer import Solving


def cmd_mcp(args) -> int:
    import anyio

    from jitagent.cli.progress import waiting
    from jitagent.config.logs import configure
    from jitagent.doors.mcp import build_server, serve_http  # the MCP SDK: only for this command
    from jitagent.solving.assembly import build_pipeline
    from jitagent.solving.config import PipelineConfig

    configure("text", stream=sys.stderr)  # on stdio, stdout is the protocol's
    access = access_of(args)
    config = PipelineConfig(synthesis=synthesis_config(args))
    with waiting("loading the models and the bank"):
        pipeline = build_pipeline(bank_location(args), cache_dir=args.data_dir, meta_model=args.meta_model,
                                  solver_model=args.solver_model, api_key=api_key(args), config=config,
                                  preload=True)
    admission = settings.fields_of(args, settings.ADMISSION, settings.SERVER)
    solving = Solving(pipeline, **admission, access=access, allow_unconfined=args.allow_unconfined)

    async def serve() -> None:
        server = await build_server(solving)
        if args.http_port is None:
            await server.run_stdio_async()
        else:
            print(f"MCP over streamable HTTP at http://{args.host}:{args.http_port}/mcp", file=sys.stderr)
            await serve_http(server, access, args.host, args.http_port)

    try:
        anyio.run(serve)
    finally:
        solving.close()
    return 0


def access_of(args) -> Access:
    """Who may call: over HTTP a token is required (a request without one is 401); on stdio, the local
    user."""
    try:
        token = secret_from(args.auth_token, args.auth_token_file, "--auth-token", TOKEN_ENV)
        access = Access.configured(token, args.tokens_file)
    except AccessError as exc:
        raise Failure(str(exc), USAGE) from None
    if args.http_port is not None and access.open:
        raise Failure(f"MCP over HTTP answers only callers with a token: --auth-token-file FILE "
                      f"(or {TOKEN_ENV}) or --tokens-file FILE", USAGE)
    return access


def add_commands(sub) -> None:
    p = sub.add_parser("mcp", help="serve the pipeline over the Model Context Protocol (stdio, or HTTP)",
                       parents=[common(), models(), bank()])
    settings.add_arguments(p, settings.MCP, config=True)
    p.set_defaults(func=cmd_mcp)
