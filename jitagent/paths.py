"""Where jitagent keeps its data unless told otherwise."""

import os
from pathlib import Path


def data_dir() -> Path:
    return Path(os.environ.get("JITAGENT_DATA", Path.home() / ".jitagent"))


def default_bank_path() -> Path:
    return data_dir() / "bank.db"
