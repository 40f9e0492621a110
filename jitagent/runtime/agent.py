"""The agent loop: execute a HarnessSpec on a Task with a solver model and tools.

`Runtime.stream()` is an async generator of `AgentEvent`s ending with a `result` event; the
gRPC server streams these as they happen. It reads top to bottom:
  samples × attempt(reflect on failure) × [decompose → action loop with memory + planning]
then vote, then the task's verifier. The runtime knows nothing of the bank.
"""

from __future__ import annotations

import collections
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from jitagent.models.base import CancelToken, Cancelled, ModelClient, ModelError, Usage
from jitagent.runtime import parsing
from jitagent.runtime.events import AgentEvent, Cost, RunResult, Trajectory
from jitagent.runtime.stage_code import StageCodeError, call_stage
from jitagent.sandbox import SandboxLimits, Workspace, sandbox_python
from jitagent.spec import HarnessSpec
from jitagent.tasks import Task
from jitagent.tools import ToolBox, ToolResult, describe_tools
from jitagent.verifiers import Verdict, code_of, verify

PER_CALL_TOKENS = 384


class BudgetExceeded(Exception):
    pass


@dataclass
class _Run:
    """Mutable state of one harness run, shared by nested sub-agents."""

    spec: HarnessSpec
    task: Task
    toolbox: ToolBox
    cancel: CancelToken
    seed: int
    cost: Cost = field(default_factory=Cost)
    trajectory: Trajectory = field(default_factory=Trajectory)
    tool_calls: int = 0

    def tokens_left(self) -> int:
        used = self.cost.completion_tokens or 0
        return self.spec.limits.max_tokens - used


@dataclass
class _Attempt:
    answer: str | None
    failure: str | None = None  # what went wrong, fed to `reflect`
    stdout: str = ""


class Runtime:
    def __init__(self, solver: ModelClient, sandbox: SandboxLimits | None = None):
        self.solver = solver
        self.sandbox = sandbox or SandboxLimits()

    async def run(self, spec: HarnessSpec, task: Task, **kw) -> RunResult:
        result = None
        async for event in self.stream(spec, task, **kw):
            if event.kind == "result":
                result = event.result
        return result

    async def stream(self, spec: HarnessSpec, task: Task, *, seed: int = 0, cancel: CancelToken | None = None,
                     deadline: float | None = None, max_steps: int | None = None,
                     verify_answer: bool = True) -> AsyncIterator[AgentEvent]:
        """Run `spec` on `task`. `deadline` (monotonic) and `max_steps` can only tighten the harness limits.
        `verify_answer=False` (dry runs) never consults the task's verifier."""
        start = time.monotonic()
        own_deadline = start + spec.limits.timeout_s
        cancel = cancel or CancelToken()
        cancel.deadline = min(d for d in (own_deadline, deadline, cancel.deadline) if d is not None)
        if max_steps is not None:
            spec = spec.model_copy(update={"limits": spec.limits.model_copy(update={"max_steps": min(max_steps, spec.limits.max_steps)})})
        allowed = [t for t in spec.tools.tools if task.allows(t)]
        workspace = Workspace(task.files)
        try:
            async for event in self._execute(spec, task, workspace, allowed, cancel, seed, start, own_deadline, verify_answer):
                yield event
        finally:  # also when the caller is cancelled mid-run
            workspace.close()

    async def _execute(self, spec, task, workspace, allowed, cancel, seed, start, own_deadline, verify_answer):
        run = _Run(spec, task, ToolBox(workspace, allowed, self.sandbox), cancel, seed)
        answer, error, stopped, interrupted = None, None, None, False
        try:
            async for event in self._samples(run):
                if event.kind == "vote":
                    answer = event.text or None
                run.trajectory.events.append(event)
                yield event
        except (Cancelled, TimeoutError) as exc:
            if cancel.deadline == own_deadline and time.monotonic() >= own_deadline:
                # the harness's own timeout_s: a genuine outcome of the harness, not an infrastructure failure
                stopped = AgentEvent("verify", text=f"harness timeout: limits.timeout_s = {spec.limits.timeout_s}", ok=False)
            else:
                error, interrupted = f"stopped: {exc or 'deadline exceeded'}", True
        except (BudgetExceeded, StageFailure) as exc:  # the harness's own doing: a genuine outcome, not infra
            stopped = AgentEvent("verify", text=f"{type(exc).__name__}: {exc}", ok=False)
        except ModelError as exc:
            error = f"model failed: {exc}"
        if stopped is not None:
            run.trajectory.events.append(stopped)
            yield stopped
        try:
            verdict = await verify(task, answer, workspace) if verify_answer else Verdict(None, None, "not verified (dry run)")
        except Exception as exc:  # a verifier that crashes scores 0 and says why; it never stops a run
            verdict = Verdict(False, 0.0, f"verifier crashed: {type(exc).__name__}: {exc}")
        run.cost.wall_s = time.monotonic() - start
        verdict_event = AgentEvent("verdict", text=verdict.detail, ok=verdict.passed)
        run.trajectory.events.append(verdict_event)
        yield verdict_event
        result = RunResult(task.id, spec.id, answer, verdict.passed, verdict.reward, verdict.detail,
                           run.cost, run.trajectory, error, interrupted)
        yield AgentEvent("result", text=answer or "", ok=verdict.passed, wall_s=run.cost.wall_s, result=result)

    # --- A: samples and vote -------------------------------------------------------------
    async def _samples(self, run: _Run) -> AsyncIterator[AgentEvent]:
        action = run.spec.action
        answers: list[str] = []
        for index in range(action.samples):
            attempt = None
            async for item in self._reflective(run, sample=index):
                if isinstance(item, _Attempt):
                    attempt = item
                else:
                    yield item
            if attempt and attempt.answer is not None:
                answers.append(attempt.answer)
            if action.samples > 1:
                yield AgentEvent("sample", text=str(attempt.answer if attempt else None), step=index)
        chosen = None
        if answers:
            if action.vote == "judge" and len(set(answers)) > 1:
                chosen = await self._judge(run, answers)
            else:
                counts = collections.Counter(parsing.normalize_vote(a) for a in answers)
                best = counts.most_common(1)[0][0]
                chosen = next(a for a in answers if parsing.normalize_vote(a) == best)
        yield AgentEvent("vote", text=chosen if chosen is not None else "", ok=chosen is not None)

    async def _judge(self, run: _Run, answers: list[str]) -> str:
        listing = "\n".join(f"{i + 1}. {a}" for i, a in enumerate(answers))
        text = await self._ask(run, [
            {"role": "system", "content": "You judge candidate answers. Reply with the number of the best one."},
            {"role": "user", "content": f"Task: {run.task.prompt}\n\nCandidates:\n{listing}\n\nBest candidate number:"}],
            max_tokens=8)
        number = parsing.first_int(text)
        return answers[number - 1] if number and 1 <= number <= len(answers) else answers[0]

    # --- P: reflect on failure (Reflexion) -----------------------------------------------
    async def _reflective(self, run: _Run, sample: int) -> AsyncIterator[AgentEvent | _Attempt]:
        planning = run.spec.planning
        attempts = planning.max_attempts if planning.kind == "reflect" else 1
        reflection = ""
        attempt = _Attempt(None)
        for number in range(attempts):
            async for item in self._solve(run, run.task.prompt, depth=0, reflection=reflection,
                                          seed=run.seed + 1000 * sample + number):
                if isinstance(item, _Attempt):
                    attempt = item
                else:
                    yield item
            if attempt.failure is None and attempt.answer is not None:
                attempt.failure = await self._check(run, attempt)
            if attempt.failure is None or number == attempts - 1:
                break
            reflection = await self._ask(run, [
                {"role": "system", "content": "You review a failed attempt and say in two sentences what to do differently."},
                {"role": "user", "content": f"Task: {run.task.prompt}\nAnswer given: {attempt.answer}\n"
                                            f"Problem: {attempt.failure}\nWhat should the next attempt do differently?"}],
                max_tokens=96)
            yield AgentEvent("reflection", text=reflection, step=number)
        yield attempt

    async def _check(self, run: _Run, attempt: _Attempt) -> str | None:
        """A's `verify` stage: the harness's own check, never the task's hidden verifier."""
        verify_kind = run.spec.action.verify
        if verify_kind == "self_check":
            text = await self._ask(run, [
                {"role": "system", "content": "You check answers. Reply CORRECT or WRONG, then one short reason."},
                {"role": "user", "content": f"Task: {run.task.prompt}\nProposed answer: {attempt.answer}\nIs it correct?"}],
                max_tokens=48)
            return None if "WRONG" not in text.upper() else f"self-check: {text.strip()}"
        if verify_kind == "run_tests":
            tests = run.task.public_tests or ""
            program = code_of(attempt.answer or "") + "\n\n" + tests
            if not program.strip():
                return None
            result = await run.toolbox.workspace.run([sandbox_python(), "-c", program], run.toolbox.limits,
                                                     deadline=run.cancel.deadline)
            return None if result.ok else f"running the answer's code failed:\n{result.describe()[-800:]}"
        return None

    # --- P: decompose (least-to-most, recursive sub-agents) ------------------------------
    async def _solve(self, run: _Run, prompt: str, depth: int, reflection: str, seed: int) -> AsyncIterator:
        planning = run.spec.planning
        context = ""
        if planning.kind == "decompose" and depth < planning.max_depth:
            text = await self._ask(run, [
                {"role": "system", "content": f"Split the task into at most {planning.max_subtasks} simpler "
                                              "sub-questions, one per line, numbered. Do not solve them."},
                {"role": "user", "content": prompt}], max_tokens=160)
            subtasks = parsing.numbered_lines(text)[: planning.max_subtasks]
            yield AgentEvent("plan", text=text, depth=depth)
            solved = []
            for i, sub in enumerate(subtasks):
                sub_prompt = sub + (f"\n\nKnown so far:\n{_qa(solved)}" if solved else "")
                sub_attempt = _Attempt(None)
                async for item in self._solve(run, sub_prompt, depth + 1, "", seed + i + 1):
                    if isinstance(item, _Attempt):
                        sub_attempt = item
                    else:
                        yield item
                solved.append((sub, sub_attempt.answer or "(no answer)"))
                yield AgentEvent("subtask", text=f"{sub} -> {sub_attempt.answer}", depth=depth + 1, step=i)
            context = "Sub-questions already answered:\n" + _qa(solved) if solved else ""
        async for item in self._act(run, prompt, depth, reflection, context, seed):
            yield item

    # --- the action loop with memory (M), planning (P) and tools (F) ---------------------
    async def _act(self, run: _Run, prompt: str, depth: int, reflection: str, context: str, seed: int) -> AsyncIterator:
        spec = run.spec
        tools = run.toolbox.allowed
        fields = {"task": prompt, "tools": describe_tools(tools) if tools else "(none)", "plan": context,
                  "notes": "", "summary": "", "observation": "", "step": "1", "reflection": reflection}
        plan = context
        if spec.planning.kind in ("upfront", "replan"):
            plan = await self._plan(run, prompt, [])
            yield AgentEvent("plan", text=plan, depth=depth)
        elif spec.code is not None and spec.code.stage == "planning":
            plan = str(await self._stage(run, {"task": prompt, "history": []}))
            yield AgentEvent("plan", text=plan, depth=depth)
        fields["plan"] = plan
        system = _fill(spec.prompts.system, fields)
        if spec.prompts.instructions:
            system += "\n" + "\n".join(spec.prompts.instructions)
        if reflection:
            system += f"\nLessons from a previous failed attempt: {reflection}"
        head = [{"role": "system", "content": system}]
        for shot in spec.prompts.few_shot:
            head += [{"role": "user", "content": shot.user}, {"role": "assistant", "content": shot.assistant}]
        user = _fill(spec.prompts.step, fields)
        if plan and "{plan}" not in spec.prompts.step:
            user += f"\n\nPlan:\n{plan}"
        history: list[dict] = [{"role": "user", "content": user}]
        notes: list[str] = []
        summary = ""
        last_stdout, last_text = "", ""
        failed_last = False
        kind = spec.action.kind
        temperature = spec.action.temperature if spec.action.samples == 1 or spec.action.temperature > 0 else 0.7
        for step in range(spec.limits.max_steps):
            if spec.planning.kind == "replan" and step and step % spec.planning.every == 0:
                plan = await self._plan(run, prompt, history)
                history.append({"role": "user", "content": f"Revised plan:\n{plan}"})
                yield AgentEvent("plan", text=plan, step=step, depth=depth)
            view, summary = await self._memory_view(run, history, notes, summary, step)
            messages = head + view
            prefill = spec.prompts.prefill
            if prefill and (step == 0 or kind == "codeact"):
                messages = messages + [{"role": "assistant", "content": prefill}]
            else:
                prefill = ""
            stop = ["```"] if prefill.startswith("```") else (["Observation:"] if kind in ("react", "codeact") else None)
            schema = parsing.json_tool_schema(tools) if kind == "json_tool" else None
            # after a failed tool call a greedy decoder repeats itself: sample instead
            retry_temperature = max(temperature, 0.6) if failed_last else temperature
            generation = await self._complete(run, messages, temperature=retry_temperature, seed=seed + step,
                                              stop=stop, json_schema=schema)
            text = prefill + generation.text
            if prefill.startswith("```"):
                text += "\n```"
            last_text = text
            run.trajectory.messages.append({"role": "assistant", "content": text})
            yield AgentEvent("model", text=text, step=step, depth=depth, usage=generation.usage, wall_s=generation.wall_s)
            history.append({"role": "assistant", "content": text})
            if spec.memory.kind == "notes":
                notes += [ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.upper().startswith("NOTE:")]

            if kind == "direct":
                yield _Attempt(await self._final(run, text))
                return
            call = self._next_call(kind, text)
            if call is None:
                if parsing.has_final(text) or kind == "json_tool" or step == spec.limits.max_steps - 1:
                    yield _Attempt(await self._final(run, text))
                    return
                history.append({"role": "user", "content": "Continue. Use a tool, or write `Final answer: ...`."})
                continue
            if call.tool == "final_answer":
                args = call.args if isinstance(call.args, dict) else {"answer": call.args}
                yield _Attempt(str(args.get("answer", "")).strip())
                return
            if step == 0 and spec.tools.required_first and call.tool != spec.tools.required_first:
                history.append({"role": "user", "content": f"First call the `{spec.tools.required_first}` tool."})
                continue
            result = await self._tool(run, call)
            yield AgentEvent("tool", text=result.output, tool=call.tool, ok=result.ok, step=step, depth=depth,
                             wall_s=result.wall_s)
            failed_last = not result.ok
            if call.tool in ("python", "shell"):
                last_stdout = result.stdout
            if spec.action.answer_from == "stdout" and call.tool == "python" and result.ok and result.stdout.strip():
                yield _Attempt(result.stdout.strip().splitlines()[-1].strip(), stdout=result.stdout)
                return
            history.append({"role": "user", "content": f"Observation:\n{result.output}"})
        if spec.action.answer_from == "stdout" and (last_stdout.strip() or run.task.verifier.kind != "python_tests"):
            answer = last_stdout.strip().splitlines()[-1] if last_stdout.strip() else None
        else:
            answer = await self._final(run, last_text)
        yield _Attempt(answer or None, failure=None if answer else "no answer within max_steps", stdout=last_stdout)

    def _next_call(self, kind: str, text: str) -> parsing.ToolCall | None:
        if kind == "codeact":
            blocks = parsing.code_blocks(text)
            return parsing.ToolCall("python", {"code": blocks[0]}) if blocks else None
        if kind == "react":
            return parsing.parse_react(text)
        return parsing.parse_json_tool(text)

    async def _tool(self, run: _Run, call: parsing.ToolCall) -> ToolResult:
        if run.tool_calls >= run.spec.limits.max_tool_calls:
            return ToolResult(f"error: tool-call limit ({run.spec.limits.max_tool_calls}) reached; give the final answer",
                              ok=False)
        run.tool_calls += 1
        result = await run.toolbox.call(call.tool, call.args, deadline=run.cancel.deadline)
        for _ in range(run.spec.tools.retry):
            if result.ok or "killed" not in result.output:
                break
            result = await run.toolbox.call(call.tool, call.args, deadline=run.cancel.deadline)
        run.trajectory.messages.append({"role": "tool", "name": call.tool, "content": result.output})
        return result

    async def _final(self, run: _Run, text: str) -> str:
        if run.spec.code is not None and run.spec.code.stage == "answer":
            return str(await self._stage(run, {"text": text}))
        if run.task.verifier.kind == "python_tests":
            # the code is the answer: the reply's own code, else the last program the agent wrote
            if "def " in code_of(text):
                return code_of(text)
            written = [m["content"] for m in run.trajectory.messages if m["role"] == "assistant" and "def " in code_of(m["content"])]
            if written:
                return code_of(written[-1])
        return parsing.extract_answer(text)

    async def _plan(self, run: _Run, prompt: str, history: list[dict]) -> str:
        """The planner is told the agent's tools, or a small model plans a human's how-to ("open a terminal")."""
        recent = "\n".join(m["content"][:300] for m in history[-4:])
        tools = run.toolbox.allowed
        can = (f"The agent carries out the plan with these tools:\n{describe_tools(tools)}" if tools
               else "The agent has no tools: it can only reason and answer in text.")
        return await self._ask(run, [
            {"role": "system", "content": "Write a short numbered plan (at most 4 steps) to solve the task. "
                                          f"Do not solve it. {can}"},
            {"role": "user", "content": prompt + (f"\n\nProgress so far:\n{recent}" if recent else "")}], max_tokens=128)

    async def _memory_view(self, run: _Run, history: list[dict], notes: list[str], summary: str, step: int):
        memory = run.spec.memory
        if run.spec.code is not None and run.spec.code.stage == "memory":
            return list(await self._stage(run, {"messages": history})), summary
        if memory.kind == "full" or len(history) <= 1:
            return history, summary
        if memory.kind == "window":
            return [history[0]] + history[1:][-memory.window:], summary
        if memory.kind == "notes":
            view = [history[0]] + history[1:][-memory.window:]
            if notes:
                view = view[:1] + [{"role": "user", "content": "Your notes:\n" + "\n".join(f"- {n}" for n in notes)}] + view[1:]
                view = _merge_users(view)
            return view, summary
        # summary: fold everything but the last turn into a running summary every `every` steps
        if step and step % memory.every == 0 and len(history) > 3:
            older = "\n".join(f"{m['role']}: {m['content'][:400]}" for m in history[1:-2])
            summary = await self._ask(run, [
                {"role": "system", "content": "Summarize the work so far: facts found, results, what remains."},
                {"role": "user", "content": (f"Earlier summary: {summary}\n" if summary else "") + older}],
                max_tokens=memory.budget)
            del history[1:-2]
            run.trajectory.events.append(AgentEvent("memory", text=summary, step=step))
        if summary:
            return _merge_users([history[0], {"role": "user", "content": f"Summary of earlier steps:\n{summary}"},
                                 *history[1:]]), summary
        return history, summary

    async def _stage(self, run: _Run, args: dict):
        try:
            return await call_stage(run.spec.code, args, run.toolbox.workspace, deadline=run.cancel.deadline)
        except StageCodeError as exc:
            raise StageFailure(str(exc)) from None

    async def _ask(self, run: _Run, messages: list[dict], max_tokens: int) -> str:
        return (await self._complete(run, messages, max_tokens=max_tokens, temperature=0.0, seed=run.seed)).text

    async def _complete(self, run: _Run, messages, *, temperature: float, seed: int, stop=None, json_schema=None,
                        max_tokens: int = PER_CALL_TOKENS):
        left = run.tokens_left()
        if left <= 0:
            raise BudgetExceeded(f"token budget exhausted (limits.max_tokens = {run.spec.limits.max_tokens})")
        if run.cancel.is_cancelled():
            raise Cancelled("deadline exceeded or cancelled")
        generation = await self.solver.complete(messages, max_tokens=min(max_tokens, left), temperature=temperature,
                                                seed=seed, stop=stop, json_schema=json_schema, cancel=run.cancel)
        run.cost.add(generation.usage)
        return generation


class StageFailure(Exception):
    """A harness code section failed at run time."""


def _fill(template: str, fields: dict) -> str:
    return template.format_map(collections.defaultdict(str, fields))


def _qa(pairs: list[tuple[str, str]]) -> str:
    return "\n".join(f"Q: {q}\nA: {a}" for q, a in pairs)


def _merge_users(messages: list[dict]) -> list[dict]:
    """Chat templates want alternating roles: fold consecutive user messages into one."""
    merged: list[dict] = []
    for m in messages:
        if merged and merged[-1]["role"] == m["role"] == "user":
            merged[-1] = {"role": "user", "content": merged[-1]["content"] + "\n\n" + m["content"]}
        else:
            merged.append(m)
    return merged


__all__ = ["Runtime", "RunResult", "AgentEvent", "Usage", "StageFailure"]
