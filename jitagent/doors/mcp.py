"""`jitagent mcp`: the pipeline as a Model Context Protocol server (the official `mcp` SDK), over stdio or,
with --http-port, streamable HTTP. Tools: `solve` (a task, optionally what verifies it) and `report` (how
a run went, by its run id); a resource per cluster the bank knows (`jitagent://clusters/<cluster>`: its
arms, their posteriors and runs, as `jitagent bank arms` shows them).

On stdio, stdout carries the protocol: everything else this process says goes to stderr; its caller is
the user who started it (the operator). Over HTTP every request carries a bearer token the solving
layer's access knows (`serve_http`), else it is answered 401.
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict
from urllib.parse import quote

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError

from jitagent import __version__
from jitagent.harness.seeds import shipped_prompts
from jitagent.solving.access import OPERATOR, Access, Caller
from jitagent.solving.feedback import Report
from jitagent.solving.layer import SolveError, Solving
from jitagent.solving.result import Reported, Solved
from jitagent.tasks.task import Expected, task_for

CLUSTERS = "jitagent://clusters/"
INSTRUCTIONS = shipped_prompts("mcp")["instructions"]


async def build_server(solving: Solving):
    """The MCP server over the solving layer, with a resource for each cluster the bank knows now."""
    server = MCPServer("jitagent", version=__version__, instructions=INSTRUCTIONS)
    clusters = ClusterResources(server, solving)

    @server.tool(structured_output=True,
                 description="Solve a task: route it to a harness (synthesizing one if need be), run "
                             "it, verify it where `expect` or `verifier` says how. Returns the answer and "
                             "the run_id to report on.")
    async def solve(ctx: Context, task: str, expect: Expected | None = None, verifier: dict | None = None,
                    type: str | None = None, request_id: str | None = None) -> Solved:
        """`expect`: the right answer (a number, or text that is one, compares numerically); `verifier`:
        any jitagent verifier as an object, e.g. {"kind": "regex", "pattern": "^4"}; `type`: the task's
        type (its cluster). Both as the HTTP door's `jitagent` object takes them (`task_for`).
        `request_id`: the run's id; solving again with it returns that run's result, never a second run."""
        try:
            task = task_for(task, type=type, expect=expect, verifier=verifier)
            caller = caller_of(solving.access, ctx)
            run_id, replay = solving.name_run(request_id, caller)
            with solving.admitted(caller):
                result = await solving.solve(task, run_id=run_id, replay=replay, door="mcp", caller=caller)
        except (ValueError, SolveError) as exc:  # the caller's to fix or to retry: told in the result
            raise ToolError(str(exc)) from None
        await clusters.publish()  # a new cluster is a new resource
        return result.solved()

    @server.tool(structured_output=True,
                 description="Report how a run went, where only you can tell: a reward in [0, 1] for the "
                             "run_id a `solve` returned. One outcome per run.")
    async def report(ctx: Context, run_id: str, reward: float, detail: str = "") -> Reported:
        try:
            done = await solving.report(Report(reward, detail), caller_of(solving.access, ctx),
                                        run_id=run_id, door="mcp")
        except SolveError as exc:
            raise ToolError(str(exc)) from None
        return done.reported()

    await clusters.publish()
    return server


def caller_of(access: Access, ctx: Context) -> Caller:
    """Over HTTP, whom the request's token names (`BearerAuth` let only known ones in); on stdio, the
    operator."""
    headers = ctx.headers
    if headers is None:
        return OPERATOR
    caller = access.caller(headers.get("authorization"))
    if caller is None:  # BearerAuth let only requests with one known token in
        raise ToolError("missing or invalid bearer token")
    return caller


async def serve_http(server, access: Access, host: str, port: int) -> None:
    """Streamable HTTP at http://HOST:PORT/mcp, behind the access's tokens."""
    import uvicorn

    app = BearerAuth(server.streamable_http_app(host=host), access)
    await uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning")).serve()


class BearerAuth:
    """ASGI middleware: an HTTP request without exactly one `Authorization: Bearer` header whose token the
    access knows is answered 401 before the MCP app sees it (two could name two callers)."""

    def __init__(self, app, access: Access):
        self.app, self.access = app, access

    async def __call__(self, scope, receive, send) -> None:
        given = [value for key, value in scope.get("headers") or () if key == b"authorization"]
        if scope["type"] == "http" and (len(given) != 1 or self.access.caller(given[0]) is None):
            from starlette.responses import JSONResponse

            refused = JSONResponse({"error": "missing or invalid bearer token"}, status_code=401,
                                   headers={"WWW-Authenticate": "Bearer"})
            await refused(scope, receive, send)
            return
        await self.app(scope, receive, send)


class ClusterResources:
    """A resource for each cluster the bank knows, published as clusters appear (listed with its name
    escaped), and a template that reads any cluster's however it is spelled: `type:add` or `type%3Aadd`."""

    def __init__(self, server, solving: Solving):
        self.server, self.solving = server, solving
        self.published: set[str] = set()
        if not solving.access.tenanted:  # with tenants, not one of them may read another's (not built)
            server.resource(CLUSTERS + "{cluster}", name="cluster", mime_type="application/json",
                            description="the arms of a cluster, by its name")(self.arms)

    async def publish(self) -> None:
        from mcp.server.mcpserver.resources import FunctionResource

        if self.solving.access.tenanted:
            return

        for cluster in await self.solving.cluster_names():
            uri = CLUSTERS + quote(cluster, safe="")
            if uri not in self.published:
                self.published.add(uri)
                self.server.add_resource(FunctionResource(
                    uri=uri, name=cluster, mime_type="application/json",
                    fn=functools.partial(self.arms, cluster),  # async: read on the server's loop
                    description=f"the arms of cluster {cluster}: posteriors, runs, rewards, tokens"))

    async def arms(self, cluster: str) -> str:
        try:
            arms = await self.solving.cluster_arms(cluster)
        except SolveError as exc:  # a cluster the bank never saw: the caller's to fix, said as such
            raise ResourceNotFoundError(str(exc)) from None
        return json.dumps([asdict(a) for a in arms], indent=2)
