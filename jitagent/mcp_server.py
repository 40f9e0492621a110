"""`jitagent mcp`: the pipeline as a Model Context Protocol server (the official `mcp` SDK), over stdio or,
with --http-port, streamable HTTP. Tools: `solve` (a task, optionally what verifies it) and `report` (how
a run went, by its run id); a resource per cluster the bank knows (`jitagent://clusters/<cluster>`: its
arms, their posteriors and runs, as `jitagent bank arms` shows them).

On stdio, stdout carries the protocol: everything else this process says goes to stderr.
"""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import asdict
from urllib.parse import quote

from pydantic import BaseModel

from jitagent import __version__, settings
from jitagent.cli_common import FieldRange, api_key, bank, bank_location, common, models
from jitagent.feedback import Report
from jitagent.pipeline import JitPipeline
from jitagent.solved import Solved
from jitagent.solving import SolveError, Solving
from jitagent.tasks import Expected, task_for

CLUSTERS = "jitagent://clusters/"
INSTRUCTIONS = ("jitagent routes each task to the agent harness that has done best on tasks like it, writing "
                "a new one where it explores, and runs it. Call `solve` with the task; where you can tell "
                "how the answer did, call `report` with its run_id and a reward in [0, 1].")


class Reported(BaseModel):
    cluster: str
    harness_id: str
    promoted: bool
    reason: str
    incumbent_id: str | None


def build_server(pipeline: JitPipeline):
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer("jitagent", version=__version__, instructions=INSTRUCTIONS)
    clusters = ClusterResources(server, pipeline)
    solving = Solving(pipeline)

    @server.tool(structured_output=True,
                 description="Solve a task: route it to a harness (synthesizing one if need be), run "
                             "it, verify it where `expect` or `verifier` says how. Returns the answer and "
                             "the run_id to report on.")
    async def solve(task: str, expect: Expected | None = None, verifier: dict | None = None,
                    type: str | None = None, request_id: str | None = None) -> Solved:
        """`expect`: the right answer (a number, or text that is one, compares numerically); `verifier`:
        any jitagent verifier as an object, e.g. {"kind": "regex", "pattern": "^4"}; `type`: the task's
        type (its cluster). Both as the HTTP door's `jitagent` object takes them (`task_for`).
        `request_id`: the run's id; solving again with it returns that run's result, never a second run."""
        try:
            task = task_for(task, type=type, expect=expect, verifier=verifier)
            with solving.admitted():
                result = await solving.solve(task, run_id=request_id, replay=request_id is not None,
                                             door="mcp")
        except (ValueError, SolveError) as exc:  # the caller's to fix or to retry: told in the result
            raise ToolError(str(exc)) from None
        await asyncio.to_thread(clusters.publish)  # a new cluster is a new resource
        return Solved.of(result)

    @server.tool(structured_output=True,
                 description="Report how a run went, where only you can tell: a reward in [0, 1] for the "
                             "run_id a `solve` returned. One outcome per run.")
    async def report(run_id: str, reward: float, detail: str = "") -> Reported:
        try:
            done = await solving.report(Report(reward, detail), run_id=run_id, door="mcp")
        except SolveError as exc:
            raise ToolError(str(exc)) from None
        return Reported(cluster=done.cluster, harness_id=done.harness_id, promoted=done.decision.promote,
                        reason=done.decision.reason, incumbent_id=done.incumbent_id)

    clusters.publish()
    return server


class ClusterResources:
    """A resource for each cluster the bank knows, published as clusters appear (listed with its name
    escaped), and a template that reads any cluster's however it is spelled: `type:add` or `type%3Aadd`."""

    def __init__(self, server, pipeline: JitPipeline):
        from harness_bank.views import BankViews

        self.server, self.views = server, BankViews(pipeline.bank)
        self.published: set[str] = set()
        server.resource(CLUSTERS + "{cluster}", name="cluster", mime_type="application/json",
                        description="the arms of a cluster, by its name")(self.arms)

    def publish(self) -> None:
        from mcp.server.mcpserver.resources import FunctionResource

        for cluster in self.views.cluster_names():
            uri = CLUSTERS + quote(cluster, safe="")
            if uri not in self.published:
                self.published.add(uri)
                self.server.add_resource(FunctionResource(
                    uri=uri, name=cluster, mime_type="application/json", fn=lambda c=cluster: self.arms(c),
                    description=f"the arms of cluster {cluster}: posteriors, runs, rewards, tokens"))

    def arms(self, cluster: str) -> str:
        from mcp.server.mcpserver.exceptions import ResourceNotFoundError

        from harness_bank.bank import BankError

        try:
            arms = self.views.arms(cluster)
        except BankError as exc:  # a cluster the bank never saw: the caller's to fix, said as such
            raise ResourceNotFoundError(str(exc)) from None
        return json.dumps([asdict(a) for a in arms], indent=2)


def cmd_mcp(args) -> int:
    import anyio

    from jitagent.assembly import build_pipeline
    from jitagent.logs import configure
    from jitagent.pipeline import PipelineConfig
    from jitagent.progress import waiting
    from jitagent.synthesis.synthesize import SynthesisConfig

    configure("text", stream=sys.stderr)  # on stdio, stdout is the protocol's
    config = PipelineConfig(synthesis=SynthesisConfig(n=args.n, dry_run=not args.no_dry_run))
    with waiting("loading the models and the bank"):
        pipeline = build_pipeline(bank_location(args), cache_dir=args.data_dir, meta_model=args.meta_model,
                                  solver_model=args.solver_model, api_key=api_key(args), config=config,
                                  preload=True)
    try:
        server = build_server(pipeline)
        if args.http_port is None:
            anyio.run(server.run_stdio_async)
        else:
            print(f"MCP over streamable HTTP at http://{args.host}:{args.http_port}/mcp", file=sys.stderr)
            anyio.run(lambda: server.run_streamable_http_async(host=args.host, port=args.http_port))
    finally:
        pipeline.bank.close()
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("mcp", help="serve the pipeline over the Model Context Protocol (stdio, or HTTP)",
                       parents=[common(), models(), bank()])
    p.add_argument("--http-port", type=FieldRange("jitagent.server.app:ServerConfig", "port"),
                   help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio")
    p.add_argument("--host", default="127.0.0.1", help="the address --http-port listens on")
    settings.add_arguments(p, [settings.N])
    p.add_argument("--no-dry-run", action="store_true",
                   help="skip running each candidate one step on the task before choosing")
    p.set_defaults(func=cmd_mcp)
