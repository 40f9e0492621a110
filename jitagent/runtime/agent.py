"""The agent loop: execute a HarnessSpec on a Task with a solver model and tools.

`Runtime.stream()` is an async generator of the run's `Step`s, then the task's `Verdict`, then the
`RunResult`; the gRPC server streams these as they happen. It reads top to bottom:
  samples × attempts (reflect on failure) × [decompose → action loop: step = execute(query())]
then vote, then the task's verifier: `stream` → `_answer` (the samples and their vote) → `_attempt` (one
sample's attempts, their reflections and the harness's check) → `_solve` (decompose, then the action loop,
each step `_execute(_query())`). A stage kind is a class in its stage's module (memory, planning,
actions, verify, voting), found by the spec's name for it. The runtime knows nothing of the bank.
"""

from __future__ import annotations

import functools
import itertools
import json
import time
from collections.abc import AsyncIterator

from jitagent.harness.spec import HarnessSpec
from jitagent.models.base import Cancelled, CancelToken, ModelClient, ModelError
from jitagent.runtime import client_calls, prompts
from jitagent.runtime.actions import Action
from jitagent.runtime.channel import last_of
from jitagent.runtime.client_calls import ClientCalls
from jitagent.runtime.clipping import OBSERVATION_CHARS, head_and_tail
from jitagent.runtime.conversation import Attempt, Conversation
from jitagent.runtime.events import RunResult, Step, Stop, solution_turns
from jitagent.runtime.memory import Memory
from jitagent.runtime.planning import Planning
from jitagent.runtime.prompts import ControlPrompts
from jitagent.runtime.run import BudgetExceeded, Run, StageFailure
from jitagent.runtime.verify import Verify
from jitagent.runtime.voting import Vote
from jitagent.sandbox.launch import SandboxLimits, Workspace
from jitagent.sandbox.tools import ToolBox
from jitagent.tasks.calls import judged
from jitagent.tasks.task import Task
from jitagent.tasks.verifiers import Verdict, verify


class Runtime:
    def __init__(self, solver: ModelClient, sandbox: SandboxLimits | None = None):
        self.solver = solver
        self.sandbox = sandbox or SandboxLimits()

    async def run(self, spec: HarnessSpec, task: Task, **kw) -> RunResult:
        return await last_of(self.stream(spec, task, **kw), RunResult)

    async def stream(self, spec: HarnessSpec, task: Task, *, seed: int = 0, cancel: CancelToken | None = None,
                     deadline: float | None = None, max_steps: int | None = None, verify_answer: bool = True,
                     examples: tuple[dict, ...] = (), solver: ModelClient | None = None
                     ) -> AsyncIterator[Step | Verdict | RunResult]:
        """Run `spec` on `task`. `deadline` (monotonic) and `max_steps` can only tighten the harness limits.
        `verify_answer=False` (dry runs) never consults the task's verifier. `examples`: solved tasks'
        messages, shown in place of the spec's own `few_shot`; `solver`: the model this run uses in place of
        the runtime's (the runtime's with the spec's adapter); both filled by the pipeline."""
        start = time.monotonic()
        own_deadline = start + spec.limits.timeout_s
        cancel = cancel or CancelToken()
        budget = cancel.tighten(deadline).deadline  # the caller's: the task's check runs on what is left
        cancel.tighten(own_deadline)
        if max_steps is not None:
            limits = spec.limits.model_copy(update={"max_steps": min(max_steps, spec.limits.max_steps)})
            spec = spec.model_copy(update={"limits": limits})
        workspace = Workspace(task.files)
        try:
            toolbox = ToolBox(workspace, [t for t in spec.tools.tools if task.allows(t)], self.sandbox)
            run = Run(spec=spec, task=task, toolbox=toolbox, cancel=cancel, seed=seed,
                      solver=solver or self.solver,
                      memory=Memory.for_spec(spec), planning=Planning.for_spec(spec),
                      action=Action.for_spec(spec), verify=Verify.for_spec(spec), vote=Vote.for_spec(spec),
                      prompts=ControlPrompts(spec.prompts.control), examples=examples)
            async for event in run.events.relay(self._answer(run, own_deadline)):
                yield event
            verdict = await self._verdict(run, verify_answer, budget)
            run.cost.wall_s = time.monotonic() - start
            yield verdict
            yield RunResult(task_id=task.id, harness_id=spec.id, answer=run.answer, passed=verdict.passed,
                            reward=verdict.reward, verdict=verdict.detail, cost=run.cost,
                            trajectory=run.trajectory, error=run.error, interrupted=run.interrupted,
                            stop=run.stop, solution=self._solution(run),
                            client_calls=run.calls_sent)
        finally:  # also when the caller is cancelled mid-run
            workspace.close()

    @staticmethod
    def _solution(run: Run) -> list[dict] | None:
        """The turns that gave the answer, where one conversation gave it (see `solution_turns`)."""
        if (run.answer is None and not run.client_calls) or run.spec.solution_format is None:
            return None
        return solution_turns(run.trajectory.events)

    @staticmethod
    async def _verdict(run: Run, verify_answer: bool, budget: float | None) -> Verdict:
        if not verify_answer:
            return Verdict(None, None, "not verified (dry run)")
        if run.client_calls and run.task.verifier.kind != "calls":
            return Verdict(None, None, "paused at the client's calls: the answer to come is what is judged")
        answer = judged(run.task.verifier.kind, run.answer, run.calls_sent)
        try:
            return await verify(run.task, answer, run.toolbox.workspace, deadline=budget)
        except Exception as exc:  # a verifier that crashes scores 0 and says why; it never stops a run
            return Verdict(False, 0.0, f"verifier crashed: {type(exc).__name__}: {exc}")

    async def _answer(self, run: Run, own_deadline: float) -> None:
        """The cluster's code where the harness carries one and it answers; else the samples and their vote,
        in the form the answer stage gives. What stops them early is recorded on the run."""
        try:
            run.answer = await self._code(run, "solve", {"task": run.task.prompt})
            if run.answer is not None:
                return
            samples, answers = run.spec.action.samples, []
            for sample in range(samples):
                answer = (await self._attempt(run, sample)).answer
                if answer is not None:
                    answers.append(answer)
                if samples > 1:
                    await run.emit(Step(kind="sample", text=str(answer), step=sample))
            chosen = await run.vote.choose(run, answers) if answers else None
            run.answer = chosen or None
            await run.emit(Step(kind="vote", text=chosen or "", ok=chosen is not None))
            if run.answer is not None:
                run.answer = await self._code(run, "answer", {"text": run.answer}) or run.answer
        except (Cancelled, TimeoutError) as exc:
            if run.cancel.deadline == own_deadline and time.monotonic() >= own_deadline:
                # the harness's own timeout_s: a genuine outcome of the harness, not an infrastructure failure
                run.stop = Stop(cause="timeout",
                                text=f"harness timeout: limits.timeout_s = {run.spec.limits.timeout_s}")
            else:
                run.error, run.interrupted = f"stopped: {exc or 'deadline exceeded'}", True
        except ClientCalls as exc:  # the run pauses; the client's results come back with its next request
            run.client_calls = exc.calls
        except (BudgetExceeded, StageFailure) as exc:  # the harness's own doing: a genuine outcome, not infra
            run.stop = Stop(cause=exc.cause, text=f"{type(exc).__name__}: {exc}")
        except ModelError as exc:
            run.error = f"model failed: {exc}"
        if run.stop is not None:
            await run.emit(Step(kind="verify", text=run.stop.text, ok=False))

    @staticmethod
    async def _code(run: Run, stage: str, args: dict) -> str | None:
        """What a `solve` or `answer` code section makes of `args`; None where the spec has none, or it
        gives nothing or fails: code written for a cluster may not fit every task, so the harness goes on."""
        if not run.has_code(stage):
            return None
        try:
            result = await run.run_code(stage, args)
        except StageFailure as exc:
            await run.emit(Step(kind="tool", tool=stage, ok=False, text=str(exc)))
            return None
        answer = None if result is None else str(result).strip() or None
        await run.emit(Step(kind="tool", tool=stage, ok=answer is not None, text=answer or "(no answer)"))
        return answer

    async def _attempt(self, run: Run, sample: int) -> Attempt:
        """One sample: attempts until the harness's own check passes, each after a reflection on the last."""
        lesson = ""
        for number in itertools.count():
            attempt = await self._solve(run, run.task.prompt, 0, lesson, run.seed + 1000 * sample + number)
            if attempt.failure is None and attempt.answer is not None:
                attempt.failure = await run.verify.failure(run, attempt.answer)
            if attempt.failure is None or number + 1 >= run.planning.attempts:
                return attempt
            lesson = await run.planning.reflect(run, attempt, number)

    async def _solve(self, run: Run, prompt: str, depth: int, lesson: str, seed: int) -> Attempt:
        """The action loop on `prompt`, after what the planning tells it first (sub-agents' answers): each
        step is execute(query()) until one gives the answer."""
        context = await run.planning.context(run, prompt, depth, seed, functools.partial(self._solve, run))
        talk = Conversation(prompt, depth, seed, lesson, plan=context)
        await run.planning.start(run, talk)
        for talk.step in range(run.spec.limits.max_steps):
            await run.planning.revise(run, talk)
            if (attempt := await self._execute(run, talk, await self._query(run, talk))) is not None:
                return attempt
        return await run.action.out_of_steps(run, talk)

    async def _query(self, run: Run, talk: Conversation) -> str:
        """The model's next reply: the spec's prompts filled for this step, the memory's view, a prefill."""
        await run.memory.fold(run, talk)
        fields = prompts.template_fields(talk, run.toolbox.allowed)
        talk.history[:1] = [prompts.task_message(run.spec.prompts, fields)]
        messages = (prompts.system_messages(run.spec.prompts, fields, run.examples)
                    + await run.memory.view(run, talk))
        forced = run.task.forced_calls  # tool_choice: the reply is a call, decoded under the tools' schemas
        # a forced call is decoded under the tools' schemas, so they are described: a server given tools and
        # a schema at once answers with `tool_calls`, not the schema's JSON
        native = run.spec.tools.client == "native" and bool(run.task.client_tools) and not forced
        if run.task.client_tools and not native:  # several at once: the client takes them, no grammar forbids
            several = run.task.parallel_calls and not forced
            messages[0]["content"] += "\n" + run.prompts.text(
                "client_tools", "system" if several else "system_one_call",
                functions=client_calls.describe(run.task.client_tools))
        # a prefill opens the reply in the harness's own format: where the client's functions may be
        # called, the reply must be free to be a call
        opening = run.action.prefill(run.spec.prompts.prefill, talk.step)
        prefill = "" if forced or run.task.client_tools else opening
        if prefill:
            messages.append({"role": "assistant", "content": prefill})
        generation = await run.complete(
            messages, temperature=run.action.temperature(talk.tool_failed), seed=talk.seed + talk.step,
            stop=None if forced else run.action.stop(opening, opened=prefill == opening),
            json_schema=client_calls.schema(forced) if forced else run.action.schema(run.toolbox.allowed),
            tools=client_calls.openai_tools(run.task.client_tools) if native else None)
        reply = prefill + generation.text
        if opening.startswith("```") and not forced and reply.count("```") % 2:
            reply += "\n```"  # the block the stop cut before its closing fence
        run.trajectory.messages.append({"role": "assistant", "content": reply})
        await run.emit(Step(kind="model", text=reply, step=talk.step, depth=talk.depth,
                                  usage=generation.usage, wall_s=generation.wall_s))
        talk.hear(reply)
        return reply

    async def _execute(self, run: Run, talk: Conversation, reply: str) -> Attempt | None:
        """Carry out a reply: an answer ends the loop, a tool call's observation joins the history, a call
        of the client's functions pauses the run."""
        tools = run.task.client_tools
        if tools and (calls := client_calls.read(reply, tools, said=run.task.prompt)):
            return await self._call_client(run, talk, calls)
        call = run.action.call(reply)
        if call is None:
            if run.action.answers(reply) or talk.step == run.spec.limits.max_steps - 1:
                return Attempt(await run.action.answer(run, reply))
            talk.tell(run.prompts.text("nudge"))
            return None
        if call.tool == "final_answer":
            args = call.args if isinstance(call.args, dict) else {"answer": call.args}
            return Attempt(str(args.get("answer", "")).strip())
        first = run.spec.tools.required_first
        if talk.step == 0 and first and call.tool != first:
            talk.tell(run.prompts.text("first_tool", tool=first))
            return None
        result = await run.call_tool(call)
        await run.emit(Step(kind="tool", text=result.output, tool=call.tool, ok=result.ok, step=talk.step,
                                  depth=talk.depth, wall_s=result.wall_s))
        talk.tool_failed, talk.observation = not result.ok, head_and_tail(result.output, OBSERVATION_CHARS)
        if call.tool in ("python", "shell"):
            talk.stdout = result.stdout
        if (answer := run.action.stdout_answer(call, result)) is not None:
            return Attempt(answer)
        talk.tell(f"Observation:\n{talk.observation}")
        return None

    @staticmethod
    async def _call_client(run: Run, talk: Conversation, calls: list) -> None:
        """Calls that hold to their schemas pause the run (ClientCalls); one that does not is never sent: the
        model hears why, and may correct it or answer without it."""
        calls = [client_calls.repaired(call, run.task.client_tools)
                 for call in calls[:None if run.task.parallel_calls else 1]]
        problems = [client_calls.problem(call, run.task.client_tools) for call in calls]
        if (bad := next((i for i, problem in enumerate(problems) if problem is not None), None)) is not None:
            # a reply's calls leave together or not at all: the model hears why, once
            await run.emit(Step(kind="tool", tool=calls[bad].tool, ok=False,
                                text=f"not sent: {problems[bad]}", step=talk.step, depth=talk.depth))
            talk.tool_failed = True
            talk.tell(run.prompts.text("client_tools", "invalid", problem=problems[bad]))
            return None
        for call in calls:
            await run.emit(Step(kind="tool", tool=call.tool, step=talk.step, depth=talk.depth,
                                text=f"sent to the client: {json.dumps(call.args)}"))
        raise ClientCalls(calls)


__all__ = ["Runtime", "RunResult", "Step", "StageFailure"]
