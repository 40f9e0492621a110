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


def one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
