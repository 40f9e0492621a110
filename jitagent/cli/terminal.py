"""What reaches a person's terminal: text a task or a model wrote (a step's tool output, a harness's name
or description, an error that quotes them) shows its control characters, escaped, and never has the
terminal act on them: no title, clipboard (OSC 52), hyperlink or clear-screen sequence gets through.

`visible` is the one place that decides; every plain `print` of such text goes through it, and every
rich console is a `TerminalConsole`, which passes all the text it renders through it (rich itself strips
only a few control codes, not ESC) and takes no markup from the text it is given."""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.console import Console
from rich.segment import Segment

# C0 but newline and tab, DEL, C1 (8-bit CSI and OSC), and the bidi overrides that reorder what is shown
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escaped(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    r"""`text` with every control character escaped as Python writes it (ESC: `\x1b`), newlines and tabs
    kept."""
    return _CONTROL.sub(_escaped, text)


class TerminalConsole(Console):
    """A rich console for text from anywhere: markup off unless a call asks for it, and the text of every
    segment through `visible`; rich's own control segments (cursor moves of a progress bar) and the
    styles it renders are left as they are."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("markup", False)  # a harness named `[link=...]` is not a hyperlink
        super().__init__(*args, **kwargs)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(s if s.control else s._replace(text=visible(s.text)) for s in buffer)
