"""The wording a cluster's tasks share, and where they differ: read off the tasks themselves, at run time.

A small writer fails most often at finding a task's inputs in its text. When the tasks of a cluster share
their wording, the parts that differ are the inputs: `read_parts(task)` (a helper whose source goes into
the code, so the code stays self-contained) returns them, and the writer is shown what it returns on each
example. Nothing here knows any task type: the wording is whatever the shown tasks have in common."""

from __future__ import annotations

import difflib
import re

import regex

GAP = "___"
MIN_SHARED = 10  # characters a run of wording inside the tasks must have to count as shared, not chance
TOKENS = re.compile(r"\s+|\w+|[^\w\s]")
MATCH_TIMEOUT_S = 1.0  # the tasks are untrusted text: the server matches them with a bound

HELPER = '''import re as _re
_WORDING = _re.compile({pattern!r}, _re.S)


def read_parts(task):
    """The parts of `task` that differ from task to task, in order; None when it reads otherwise."""
    found = _WORDING.fullmatch(task)
    return None if found is None else [part.strip() for part in found.groups()]


'''


def shared_wording(texts: list[str]) -> str | None:
    """The wording the texts share, with GAP where they differ, that reads every one of them; None when they
    share nothing worth showing. Runs shared by chance inside the varying part (a space, a sign) are gaps:
    a run is dropped, shortest first, until the wording fits every text."""
    pieces = shared_pieces(texts)
    while any(piece != GAP for piece in pieces):
        wording = "".join(GAP if piece == GAP else piece for piece in merged(pieces))
        if GAP not in wording:
            return None
        if all(parts_of(wording, text) is not None for text in texts):
            return wording
        shortest = min((i for i, piece in enumerate(pieces) if piece != GAP), key=lambda i: len(pieces[i]))
        pieces[shortest] = GAP
    return None


def shared_pieces(texts: list[str]) -> list[str]:
    """The first text's runs of tokens, each kept if every other text has it too (in order), else GAP."""
    base = TOKENS.findall(texts[0])
    kept = [True] * len(base)
    for other in texts[1:]:
        same = [False] * len(base)
        matcher = difflib.SequenceMatcher(None, base, TOKENS.findall(other), autojunk=False)
        for block in matcher.get_matching_blocks():
            same[block.a:block.a + block.size] = [True] * block.size
        kept = [k and s for k, s in zip(kept, same)]
    pieces, start = [], 0
    while start < len(base):
        end = start
        while end < len(base) and kept[end] == kept[start]:
            end += 1
        text, edge = "".join(base[start:end]), start == 0 or end == len(base)
        worth = len(text.strip()) >= MIN_SHARED or (edge and text.strip())
        pieces.append(text if kept[start] and worth else GAP)
        start = end
    return pieces


def merged(pieces: list[str]) -> list[str]:
    """Neighbouring gaps as one."""
    return [p for i, p in enumerate(pieces) if p != GAP or i == 0 or pieces[i - 1] != GAP]


def pattern(wording: str) -> str:
    """A regular expression that reads each gap of the wording as a group; runs of white space match any
    white space, and the ends of a text may carry more."""
    def fixed(piece: str) -> str:
        words = piece.split()
        if not words:
            return r"\s+" if piece else ""
        return r"\s*" + r"\s+".join(map(re.escape, words)) + r"\s*"
    return r"\s*" + "(.*?)".join(map(fixed, wording.split(GAP))) + r"\s*"


def helper(wording: str) -> str:
    """Python source that defines `read_parts(task)` for this wording."""
    return HELPER.format(pattern=pattern(wording))


def parts_of(wording: str, text: str) -> list[str] | None:
    """What `read_parts(text)` returns, computed here (with a time bound) to show the writer."""
    try:
        found = regex.fullmatch(pattern(wording), text, regex.S, timeout=MATCH_TIMEOUT_S)
    except TimeoutError:
        return None
    return None if found is None else [part.strip() for part in found.groups()]
