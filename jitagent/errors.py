"""An exception as one line: for exit messages and log fields (a faiss or sqlite error spans several)."""


def one_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
