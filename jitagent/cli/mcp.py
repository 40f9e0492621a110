"""`jitagent mcp`: serve the pipeline over the Model Context Protocol (jitagent.doors.mcp), over stdio or,
with --http-port, streamable HTTP."""

from __future__ import annotations

import sys

from jitagent.cli import settings
from jitagent.cli.common import api_key, bank, bank_location, common, models, synthesis_config
from jitagent.doors.mcp import build_server
from jitagent.solving.layer import Solving


def cmd_mcp(args) -> int:
    import anyio

    from jitagent.cli.progress import waiting
    from jitagent.config.logs import configure
    from jitagent.solving.assembly import build_pipeline
    from jitagent.solving.config import PipelineConfig

    configure("text", stream=sys.stderr)  # on stdio, stdout is the protocol's
    config = PipelineConfig(synthesis=synthesis_config(args))
    with waiting("loading the models and the bank"):
        pipeline = build_pipeline(bank_location(args), cache_dir=args.data_dir, meta_model=args.meta_model,
                                  solver_model=args.solver_model, api_key=api_key(args), config=config,
                                  preload=True)
    solving = Solving(pipeline, **settings.fields_of(args, settings.ADMISSION, settings.SERVER))

    async def serve() -> None:
        server = await build_server(solving)
        if args.http_port is None:
            await server.run_stdio_async()
        else:
            print(f"MCP over streamable HTTP at http://{args.host}:{args.http_port}/mcp", file=sys.stderr)
            await server.run_streamable_http_async(host=args.host, port=args.http_port)

    try:
        anyio.run(serve)
    finally:
        solving.close()
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("mcp", help="serve the pipeline over the Model Context Protocol (stdio, or HTTP)",
                       parents=[common(), models(), bank()])
    settings.add_arguments(p, settings.MCP, config=True)
    p.set_defaults(func=cmd_mcp)
