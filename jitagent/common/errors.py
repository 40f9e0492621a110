"""An exception as one line: for exit messages and log fields (a faiss or sqlite error spans several);
a service that cannot be used, with the exit status its kind of failure gets everywhere."""

UNREACHABLE, REFUSED_LOGIN = 1, 2  # exit statuses: the work failed / the settings given are wrong


class ServiceError(Exception):
    """PostgreSQL or Redis cannot be used. One message and one exit status per kind of failure, whatever
    the command: `UNREACHABLE` when nothing answers (start it), `REFUSED_LOGIN` when it wants a password
    the settings did not give (or a wrong one)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


def clipped(text: str, limit: int = 200) -> str:
    """`text` whole when short, else its start and its length: what an error message quotes of a request
    (a megabyte may come where an id goes) is never echoed whole."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def brief(text: str, limit: int = 100) -> str:
    """`text` as one line of at most `limit` characters (whitespace runs, newlines too, made one space),
    cut at a word with "..." after it and a quote the cut left open closed: a traceback's tail shown in
    a progress line or a table's cell ends cleanly, not mid-quote on another line."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit - 4]  # room for "..." and a closing quote
    if " " in cut[limit // 2:]:
        cut = cut.rsplit(" ", 1)[0]
    return cut + "..." + (_open_quote(cut) or "")


def _open_quote(text: str) -> str | None:
    """The quote a quoted span of `text` opened and did not close; an apostrophe (after a letter or
    digit, as in "don't") opens none."""
    open_ = None
    for i, ch in enumerate(text):
        if ch == open_:
            open_ = None
        elif ch in "'\"" and open_ is None and (i == 0 or not text[i - 1].isalnum()):
            open_ = ch
    return open_


def one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
