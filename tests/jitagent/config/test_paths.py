"""Opening the bank in a data dir: what cannot be used is one line saying why, never a traceback."""

import pytest

from harness_bank import HarnessBank
from jitagent.config.paths import DataDirError, open_bank


def under_a_file(tmp_path):
    (tmp_path / "file").write_text("x")
    return tmp_path / "file" / "data" / "bank.db"


def bank_is_a_directory(tmp_path):
    (tmp_path / "bank.db").mkdir()
    return tmp_path / "bank.db"


def bank_is_not_a_database(tmp_path):
    (tmp_path / "bank.db").write_bytes(b"this is not sqlite" * 10)
    return tmp_path / "bank.db"


def index_is_corrupt(tmp_path):
    HarnessBank(tmp_path / "bank.db").close()
    (tmp_path / "bank.db.faiss").write_bytes(b"\x00garbage" * 100)
    return tmp_path / "bank.db"


@pytest.mark.parametrize("prepare, fragment", [
    (under_a_file, "Not a directory"), (bank_is_a_directory, "bank.db is not a file"),
    (bank_is_not_a_database, "bank.db is not an SQLite database"),
    (index_is_corrupt, "cannot open the harness bank bank.db"),
])
def test_a_bank_that_cannot_be_used_is_one_line_naming_the_data_dir(tmp_path, prepare, fragment):
    with pytest.raises(DataDirError) as err:
        open_bank(prepare(tmp_path))
    message = str(err.value)
    assert message.startswith("data dir ") and fragment in message and "\n" not in message


def test_a_new_bank_is_created_with_its_directory(tmp_path):
    bank = open_bank(tmp_path / "new" / "bank.db")
    assert bank.stats()["harnesses"] == 0
    bank.close()


def test_the_scripted_model_may_write_to_a_postgresql_jitagent_started_to_throw_away(postgres_url, tmp_path):
    open_bank(postgres_url, cache_dir=tmp_path, models=["scripted"]).close()  # its cluster_name says so


def test_what_the_user_asked_for_outside_the_data_dir_is_not_made_private_with_the_bank(tmp_path):
    """Once a bank is open the process's umask is 077 (the bank, its WAL and index are the user's only);
    a report, a figure, an export or a ledger written elsewhere takes the user's own umask's mode."""
    import os

    from jitagent.benchmark.ledger import Ledger
    from jitagent.config.paths import USER_UMASK

    open_bank(tmp_path / "data" / "bank.db").close()
    ledger = Ledger(tmp_path / "results.jsonl")
    ledger.add({"arm": "a", "task_id": "t", "repeat": 0, "error": None})
    assert os.stat(tmp_path / "data" / "bank.db").st_mode & 0o777 == 0o600
    assert os.stat(ledger.path).st_mode & 0o777 == 0o666 & ~USER_UMASK  # 0644 under umask 022
