"""BFCL v4's `multi_turn_base` as a stream of episodes, the client's side holding BFCL's executable
environments (the file system, the trading bot, the vehicle, ... of `bfcl_eval`, from the wheel).

An entry is a conversation of user turns over the functions of its environment's classes. Each arm meets it as
a client would serve it: every reply's calls are executed in the arm's own copy of the environment and their
results sent back, until a reply makes no call (at most `--steps` replies a turn, BFCL's limit unless set);
then the next user turn. The episode is scored by BFCL's own `multi_turn_checker` (the environments' states
and the calls' results after each turn against the ground truth's), on the calls as BFCL records them for a
function-calling model (`name(k=repr(v), ...)`, only replies that made calls).

Arms: `bare` (the solver's GGUF served with its own chat template, the whole conversation as messages, as
`bench`'s bare arm) and `jit_stream` (each reply a `solve` of the conversation so far, as the OpenAI door
turns a conversation into a task; the episode's reward reported for every run of it once it is scored, the
only feedback its client has). Every reply gets the bench's unit budget (`--budget-s`, in the reference
machine's model time with `--reference-probe-s`). Entries in a seeded order; every arm finishes an entry
before any arm meets the next; rows in the bench's shape, one an episode (`results.jsonl`), each reply's
trace and each episode's calls in `trajectories.jsonl`; resumable between episodes (an episode cut short is
run again; the runs of its first try stay in the JIT bank unreported).

Usage:
  pip download --no-deps bfcl-eval==2026.3.23 -d /tmp/bfcl
  python bench/bfcl_multi_turn.py RUN --wheel WHEEL --entries 20 --budget-s 30 --reference-probe-s 4.8
  python bench/bfcl_multi_turn.py RUN --wheel WHEEL --report-only
  python bench/bfcl_multi_turn.py RUN --wheel WHEEL --replay-truth   # the client's side alone, no model
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import itertools
import json
import random
import statistics
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from bfcl_score import unpacked
from bfcl_suite import tool_of

from jitagent.benchmark.arms import BARE
from jitagent.benchmark.bare import BareModel
from jitagent.benchmark.curve import gap, paired, stream_rows
from jitagent.benchmark.ledger import Ledger, total_tokens, unit_row
from jitagent.benchmark.runner import Bench, BenchConfig
from jitagent.benchmark.stream import bare_model
from jitagent.common.usage import known_sum
from jitagent.doors.openai_http import Message, conversation_text
from jitagent.models.embedded import EmbeddedModel
from jitagent.runtime.events import RunResult
from jitagent.solving.events import SolveResult
from jitagent.solving.feedback import Report
from jitagent.solving.pipeline import JitPipeline
from jitagent.tasks.task import ClientTool, Task

CATEGORY = "multi_turn_base"
JIT = "jit_stream"
ORDER_SEED = 4402
TOKENS = ("execution_tokens", "prompt_tokens", "completion_tokens", "synthesis_tokens", "repair_tokens")


@dataclass
class Entry:
    """One entry as its client holds it: BFCL's record (turns, initial config, classes), the ground truth's
    calls per turn, and the functions of its classes as client tools."""

    raw: dict
    truth: list[list[str]]
    tools: list[ClientTool]

    @property
    def id(self) -> str:
        return self.raw["id"]

    def task(self, label: str, messages: list[dict]) -> Task:
        """The conversation so far as the task a door makes of it."""
        text = conversation_text([Message.model_validate(m) for m in messages])
        return Task(id=label, prompt=text, type=CATEGORY, client_tools=self.tools)


def read_entries(wheel: Path, doc_files: dict[str, str]) -> list[Entry]:
    """The category's entries with their ground truth and functions (`doc_files`: each class's function
    docs' file, BFCL's mapping)."""
    with zipfile.ZipFile(wheel) as archive:
        def lines(name: str) -> list[dict]:
            return [json.loads(x) for x in archive.read(f"bfcl_eval/data/{name}").decode().splitlines()
                    if x.strip()]
        truth = {a["id"]: a["ground_truth"] for a in lines(f"possible_answer/BFCL_v4_{CATEGORY}.json")}
        docs = {c: lines(f"multi_turn_func_doc/{f}") for c, f in doc_files.items()}
        return [Entry(raw, truth[raw["id"]], [ClientTool(**tool_of(f)) for c in raw["involved_classes"]
                                              for f in docs[c]])
                for raw in lines(f"BFCL_v4_{CATEGORY}.json")]


class Environments:
    """BFCL's executable classes and checker from the wheel: one copy of an entry's environment per arm."""

    def __init__(self, wheel: Path):
        self._dir = unpacked(wheel)
        from bfcl_eval.constants.executable_backend_config import MULTI_TURN_FUNC_DOC_FILE_MAPPING
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
        from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

        self.doc_files = MULTI_TURN_FUNC_DOC_FILE_MAPPING
        self._execute, self._check = execute_multi_turn_func_call, multi_turn_checker

    def execute(self, arm: str, entry: Entry, calls: list[str]) -> list[str]:
        """The calls' results in `arm`'s copy of the entry's environment (made at its first call)."""
        results, _ = self._execute(calls, entry.raw.get("initial_config", {}), entry.raw["involved_classes"],
                                   arm.replace(":", "_"), entry.id)
        return results

    def verdict(self, arm: str, entry: Entry, made: list[list[list[str]]]) -> tuple[bool, str]:
        """BFCL's verdict on `arm`'s calls in an episode (per turn, per reply that made calls); the checker
        replays them and the ground truth's in copies of its own, named for the arm (it keeps them)."""
        try:
            out = self._check(made, entry.truth, entry.raw, CATEGORY, f"jitagent_{arm.replace(':', '_')}")
        except Exception as exc:  # the checker's own failure on a malformed value: BFCL counts it a miss
            return False, f"checker: {type(exc).__name__}: {exc}"
        return out["valid"], out.get("error_message", "")


def call_string(call: dict) -> str:
    """A call as BFCL records a function-calling model's (`model_handler.utils.convert_to_function_call`)."""
    return f"{call['name']}({','.join(f'{k}={v!r}' for k, v in call['arguments'].items())})"


@dataclass
class Reply:
    """One reply of an arm in an episode: its calls, its text, its unit row, the run id to report to."""

    calls: list[dict]
    text: str
    row: dict
    run_id: str = ""


class Answerer(Protocol):
    name: str

    async def reply(self, entry: Entry, label: str, messages: list[dict], order: int) -> Reply: ...

    async def scored(self, replies: list[Reply], reward: float, verdict: str) -> None: ...


@dataclass
class BareArm:
    """The GGUF served with its own chat template: the conversation as messages, calls' arguments as objects
    (as llama.cpp's server hands them to a template)."""

    bench: Bench
    model: BareModel
    name: str = BARE

    async def reply(self, entry: Entry, label: str, messages: list[dict], order: int) -> Reply:
        task = entry.task(label, messages)
        run = await self.model.run(task, self.bench.unit_budget_s, messages=[objects(m) for m in messages])
        row = unit_row(BARE, task, 0, run, budget_exhausted=run.interrupted, route=BARE)
        self.bench.ledger.trace(row, run, harness=BARE)
        return Reply(run.client_calls, run.trajectory.messages[-1]["content"], row)

    async def scored(self, replies: list[Reply], reward: float, verdict: str) -> None:
        """The bare model learns nothing."""


def objects(message: dict) -> dict:
    calls = message.get("tool_calls")
    if not calls:
        return message
    return message | {"tool_calls": [c | {"function": c["function"] | {
        "arguments": json.loads(c["function"]["arguments"])}} for c in calls]}


@dataclass
class JitArm:
    """Each reply a `solve` of the conversation so far on the stream's bank; the episode's reward reported
    for each of its runs."""

    bench: Bench
    pipeline: JitPipeline
    name: str = JIT

    async def reply(self, entry: Entry, label: str, messages: list[dict], order: int) -> Reply:
        client = Unchecked(entry.task(label, messages))
        row = await self.bench._solve(self.pipeline, self.name, client.sent, 0, order, client)
        run = client.run
        return Reply(run.client_calls if run else [], (run.answer or "") if run else "", row, client.run_id)

    async def scored(self, replies: list[Reply], reward: float, verdict: str) -> None:
        for reply in replies:
            if reply.run_id:
                await self.pipeline.report_outcome(Report(reward, verdict), run_id=reply.run_id)


@dataclass
class Unchecked:
    """The bench's client side of one reply: nothing to check until the episode ends."""

    sent: Task
    run: RunResult | None = None
    run_id: str = ""

    async def answered(self, pipeline: JitPipeline, result: SolveResult, exhausted: bool) -> RunResult:
        self.run, self.run_id = result.run, result.run_id
        return result.run


@dataclass
class Episode:
    """An entry through one arm: the conversation, the calls per turn (each reply that made calls), the
    replies, and whether it was cut off (BFCL's force-quit: more call-making replies in a turn than its
    limit fails the whole entry)."""

    entry: Entry
    messages: list[dict] = field(default_factory=list)
    made: list[list[list[str]]] = field(default_factory=list)
    replies: list[Reply] = field(default_factory=list)
    cut_off: bool = False

    async def run(self, arm: Answerer, envs: Environments, order: int, limit: int) -> None:
        """Turn by turn, as BFCL's function-calling loop: a reply's calls run and their results go back
        until a reply makes none (its text joins the conversation) or runs out of budget or fails."""
        for t, turn in enumerate(self.entry.raw["question"]):
            self.messages += turn
            self.made.append([])
            for s in itertools.count():
                reply = await arm.reply(self.entry, f"{self.entry.id}/{t}.{s}", self.messages, order)
                self.replies.append(reply)
                if reply.calls:
                    self._run_calls(arm.name, envs, reply.calls, f"call_{t}_{s}")
                else:
                    self.messages.append({"role": "assistant", "content": reply.text})
                if not reply.calls or reply.row["budget_exhausted"] or reply.row["error"]:
                    break
                if len(self.made[-1]) > limit:
                    self.cut_off = True
                    return

    def _run_calls(self, arm: str, envs: Environments, calls: list[dict], prefix: str) -> None:
        """The calls as the assistant's message (no text beside them, as BFCL's handlers keep it) and their
        results, run in the arm's environment, as the tool's messages."""
        made = [call_string(c) for c in calls]
        self.made[-1].append(made)
        ids = [f"{prefix}_{i}" for i in range(len(calls))]
        self.messages.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": i, "type": "function",
             "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
            for i, c in zip(ids, calls)]})
        self.messages += [{"role": "tool", "tool_call_id": i, "content": result}
                          for i, result in zip(ids, envs.execute(arm, self.entry, made))]

    def verdict(self, arm: str, envs: Environments) -> tuple[bool, str]:
        if self.cut_off:
            return False, "force-terminated: more call-making replies in a turn than BFCL's limit"
        return envs.verdict(arm, self.entry, self.made)

    def row(self, arm: str, order: int, passed: bool) -> dict:
        """The episode as one unit of the ledger: its replies' tokens and wall time summed (unknown where
        one's is), out of budget where one reply was. A reply's failure (a conversation past the context,
        say) ends its turn and is the arm's, as in BFCL: counted, never an infrastructure error to rerun."""
        rows = [r.row for r in self.replies]
        return {"arm": arm, "task_id": self.entry.id, "type": CATEGORY, "repeat": 0, "order": order,
                "reward": float(passed), "passed": passed, "error": None, "cut_off": self.cut_off,
                "reply_errors": sum(r["error"] is not None for r in rows),
                "budget_exhausted": any(r["budget_exhausted"] for r in rows), "replies": len(rows),
                "replies_out_of_budget": sum(r["budget_exhausted"] for r in rows),
                "calls": sum(len(step) for turn in self.made for step in turn),
                "routes": [r["route"] for r in rows],
                **{k: known_sum(*(r[k] for r in rows)) for k in TOKENS},
                "wall_s": sum(r["wall_s"] for r in rows)}


@dataclass
class Truth:
    """The ground truth as an arm (no model): each turn's calls in one reply, named as the functions' schemas
    order their parameters where the truth passes them by position. What the client's side must get right on
    its own: replayed through the episode loop, every entry should be judged right."""

    name: str = "truth"

    async def reply(self, entry: Entry, label: str, messages: list[dict], order: int) -> Reply:
        turn, step = map(int, label.rsplit("/", 1)[1].split("."))
        calls = [] if step else [self._call(entry, c) for c in entry.truth[turn]]
        return Reply(calls, "", {"route": "truth", "budget_exhausted": False, "error": None, "wall_s": 0.0,
                                 **dict.fromkeys(TOKENS, 0)})

    async def scored(self, replies: list[Reply], reward: float, verdict: str) -> None:
        """The truth learns nothing."""

    @staticmethod
    def _call(entry: Entry, text: str) -> dict:
        node = ast.parse(text, mode="eval").body
        names = list(next(t for t in entry.tools if t.name == node.func.id).parameters.get("properties", {}))
        arguments = dict(zip(names, map(ast.literal_eval, node.args)))
        return {"name": node.func.id, "arguments": arguments | {k.arg: ast.literal_eval(k.value)
                                                                for k in node.keywords}}


async def replayed(envs: Environments, entries: list[Entry]) -> tuple[int, list[str]]:
    """How many entries the ground truth replayed is judged right on, and the verdicts of the others."""
    right, wrong = 0, []
    for entry in entries:
        episode = Episode(entry)
        await episode.run(Truth(), envs, 0, limit=1)
        passed, why = episode.verdict(Truth.name, envs)
        right += passed
        wrong += [] if passed else [f"{entry.id}: {why}"]
    return right, wrong


def answerers(bench: Bench, arms: list[str]) -> list[Answerer]:
    """The arms asked for; the JIT arm on its stream's bank (made from the seeds, then as it was left)."""
    return [BareArm(bench, bare_model(bench.solver)) if arm == BARE
            else JitArm(bench, bench.stream_pipeline(bench.config.out / f"{JIT}-stream.db")) for arm in arms]


class MultiTurn:
    """The stream of episodes: every arm finishes an entry before any meets the next."""

    def __init__(self, bench: Bench, envs: Environments, entries: list[Entry], limit: int):
        self.bench, self.envs, self.entries, self.limit = bench, envs, entries, limit

    async def run(self, arms: list[Answerer]) -> None:
        ledger, context = self.bench.ledger, self.bench.context
        for order, entry in enumerate(self.entries):
            said = [f"{arm.name} {await self._episode(arm, entry, order):.0f}" for arm in arms
                    if not ledger.done(arm.name, entry.id, 0, context)]
            print(f"[episode {order + 1}/{len(self.entries)}] {entry.id}: {', '.join(said) or 'done before'}",
                  file=sys.stderr, flush=True)

    async def _episode(self, arm: Answerer, entry: Entry, order: int) -> float:
        episode = Episode(entry)
        await episode.run(arm, self.envs, order, self.limit)
        passed, why = episode.verdict(arm.name, self.envs)
        row = episode.row(arm.name, order, passed) | self.bench.context
        await arm.scored(episode.replies, row["reward"], why or "passed")
        self.bench.ledger.add(row)
        with (self.bench.config.out / "trajectories.jsonl").open("a") as f:
            f.write(json.dumps({"arm": arm.name, "task_id": entry.id, "repeat": 0, "reward": row["reward"],
                                "episode": episode.made, "verdict": why}) + "\n")
        return row["reward"]


async def stream(multi_turn: MultiTurn, arms: list[str]) -> None:
    bench = multi_turn.bench
    await bench.measure_machine()
    running = answerers(bench, arms)
    try:
        await multi_turn.run(running)
    finally:
        for arm in running:
            if isinstance(arm, JitArm):
                arm.pipeline.bank.close()


def stream_order(entries: list[Entry], count: int | None) -> list[Entry]:
    order = list(entries)
    random.Random(ORDER_SEED).shuffle(order)
    return order[:count]


def report(run: Path) -> str:
    """Accuracy per arm over the entries every arm finished, paired against the bare model; tokens per
    entry (over the entries whose count is known, how many said where some are not; against the bare
    model's on the entries both know), replies and wall time per entry, episodes cut off (BFCL's
    force-quit), and episodes out of budget (with the replies that were, where the ledger counts them: an
    out-of-budget reply ends its turn)."""
    rows = stream_rows(Ledger(run / "results.jsonl"))
    orders = sorted(next(iter(rows.values()), {}))
    if not orders:
        return "No entry was finished by every arm yet."
    lines = [f"{len(orders)} `{CATEGORY}` entries finished by every arm, scored by BFCL's "
             "`multi_turn_checker`.", "",
             "| arm | accuracy (%) | vs bare (points, paired 95%) | tokens/entry | × bare's | replies/entry "
             "| wall s/entry | cut off | out of budget (episodes / replies) |", "|---" * 9 + "|"]
    for arm, units in sorted(rows.items(), key=lambda kv: kv[0] != BARE):
        values = list(units.values())
        versus = gap(paired(units, rows[BARE], orders)) if BARE in rows and arm != BARE else "–"
        ratio = token_ratio(units, rows[BARE], orders) if BARE in rows else "–"
        known = [t for r in values if (t := total_tokens(r)) is not None]
        lines.append(f"| {arm} | {100 * statistics.fmean(r['reward'] for r in values):.1f} | {versus} | "
                     f"{tokens_per_entry(known, len(values))} | {ratio} | "
                     f"{statistics.fmean(r['replies'] for r in values):.1f} | "
                     f"{statistics.fmean(r['wall_s'] for r in values):.1f} | "
                     f"{sum(r['cut_off'] for r in values)} | {out_of_budget(values)} |")
    return "\n".join(lines) + "\n"


def tokens_per_entry(known: list[int], entries: int) -> str:
    if not known:
        return "–"
    return f"{statistics.fmean(known):,.0f}" + (f" ({len(known)} of {entries} known)" if len(known) < entries
                                               else "")


def out_of_budget(rows: list[dict]) -> str:
    """Episodes with a reply out of budget, and those replies (rows from before they were counted: –)."""
    replies = [r.get("replies_out_of_budget") for r in rows]
    counted = "–" if None in replies else sum(replies)
    return f"{sum(r['budget_exhausted'] for r in rows)} / {counted}"


def token_ratio(units: dict[int, dict], base: dict[int, dict], orders: list[int]) -> str:
    """Tokens over the base's, on the entries whose count both know."""
    both = [k for k in orders if None not in (total_tokens(units[k]), total_tokens(base[k]))]
    if not both:
        return "–"
    return f"{sum(total_tokens(units[k]) for k in both) / sum(total_tokens(base[k]) for k in both):.2f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=Path, help="the run's folder (ledger, traces, the JIT arm's bank)")
    parser.add_argument("--wheel", type=Path, required=True, help="the bfcl-eval wheel (pip download)")
    parser.add_argument("--arms", nargs="+", choices=(BARE, JIT), default=[BARE, JIT])
    parser.add_argument("--entries", type=int,
                        help="the first N entries of the stream's order (default: all)")
    parser.add_argument("--steps", type=int, help="replies a turn at most (default: BFCL's limit)")
    parser.add_argument("--budget-s", type=float, default=30.0, help="seconds a reply (default: 30)")
    parser.add_argument("--reference-probe-s", type=float, help="as `jitagent bench`'s")
    parser.add_argument("--n-ctx", type=int, default=16384, help="the solver's context (the functions' docs "
                        "are ~5,500 tokens an entry)")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--replay-truth", action="store_true", help="no model: replay the ground truth's "
                        "calls through the episodes and say how many are judged right (the client's side)")
    args = parser.parse_args(argv)
    if args.replay_truth:
        envs = Environments(args.wheel)
        entries = stream_order(read_entries(args.wheel, envs.doc_files), args.entries)
        right, wrong = asyncio.run(replayed(envs, entries))
        print(f"the ground truth replayed: {right} of {len(entries)} entries judged right", *wrong, sep="\n")
        return 0 if not wrong else 1
    if not args.report_only:
        envs = Environments(args.wheel)
        from bfcl_eval.constants.default_prompts import MAXIMUM_STEP_LIMIT

        entries = stream_order(read_entries(args.wheel, envs.doc_files), args.entries)
        args.run.mkdir(parents=True, exist_ok=True)
        suite = args.run / "suite.jsonl"  # the entries' first turns: what the bench's seeds are chosen for
        first_turns = (e.task(e.id, e.raw["question"][0]) for e in entries)
        suite.write_text("".join(t.model_dump_json() + "\n" for t in first_turns))
        solver = EmbeddedModel(n_ctx=args.n_ctx, slot="solver")
        config = BenchConfig(suite=str(suite), out=args.run, n=1, budget_s=args.budget_s,
                             reference_probe_s=args.reference_probe_s, arms=tuple(args.arms))
        bench = Bench(config, solver, EmbeddedModel(slot="meta"))
        asyncio.run(stream(MultiTurn(bench, envs, entries, args.steps or MAXIMUM_STEP_LIMIT), args.arms))
    text = report(args.run)
    (args.run / "report.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
