"""`jitagent mcp`: the pipeline as a Model Context Protocol server (the official `mcp` SDK), over stdio or,
with --http-port, streamable HTTP. Tools: `solve` (a task, optionally what verifies it) and `report` (how
a run went, by its run id); a resource per cluster the bank knows (`jitagent://clusters/<cluster>`: its
arms, their posteriors and runs, as `jitagent bank arms` shows them).

On stdio, stdout carries the protocol: everything else this process says goes to stderr.
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict
from urllib.parse import quote

from jitagent import __version__
from jitagent.harness.seeds import shipped_prompts
from jitagent.solving.feedback import Report
from jitagent.solving.layer import SolveError, Solving
from jitagent.solving.result import Reported, Solved
from jitagent.tasks.task import Expected, task_for

CLUSTERS = "jitagent://clusters/"
INSTRUCTIONS = shipped_prompts("mcp")["instructions"]


async def build_server(solving: Solving):
    """The MCP server over the solving layer, with a resource for each cluster the bank knows now."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer("jitagent", version=__version__, instructions=INSTRUCTIONS)
    clusters = ClusterResources(server, solving)

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
        await clusters.publish()  # a new cluster is a new resource
        return result.solved()

    @server.tool(structured_output=True,
                 description="Report how a run went, where only you can tell: a reward in [0, 1] for the "
                             "run_id a `solve` returned. One outcome per run.")
    async def report(run_id: str, reward: float, detail: str = "") -> Reported:
        try:
            done = await solving.report(Report(reward, detail), run_id=run_id, door="mcp")
        except SolveError as exc:
            raise ToolError(str(exc)) from None
        return done.reported()

    await clusters.publish()
    return server


class ClusterResources:
    """A resource for each cluster the bank knows, published as clusters appear (listed with its name
    escaped), and a template that reads any cluster's however it is spelled: `type:add` or `type%3Aadd`."""

    def __init__(self, server, solving: Solving):
        self.server, self.solving = server, solving
        self.published: set[str] = set()
        server.resource(CLUSTERS + "{cluster}", name="cluster", mime_type="application/json",
                        description="the arms of a cluster, by its name")(self.arms)

    async def publish(self) -> None:
        from mcp.server.mcpserver.resources import FunctionResource

        for cluster in await self.solving.cluster_names():
            uri = CLUSTERS + quote(cluster, safe="")
            if uri not in self.published:
                self.published.add(uri)
                self.server.add_resource(FunctionResource(
                    uri=uri, name=cluster, mime_type="application/json",
                    fn=functools.partial(self.arms, cluster),  # async: read on the server's loop
                    description=f"the arms of cluster {cluster}: posteriors, runs, rewards, tokens"))

    async def arms(self, cluster: str) -> str:
        from mcp.server.mcpserver.exceptions import ResourceNotFoundError

        try:
            arms = await self.solving.cluster_arms(cluster)
        except SolveError as exc:  # a cluster the bank never saw: the caller's to fix, said as such
            raise ResourceNotFoundError(str(exc)) from None
        return json.dumps([asdict(a) for a in arms], indent=2)
