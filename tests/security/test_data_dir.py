"""Red team, issue 22: the data dir a server creates is its user's alone — the bank with its WAL and
SHM files, its faiss index, the directory itself — and so is a bank made before that was the rule."""

from __future__ import annotations

import asyncio
import os
import stat

from jitagent.config.paths import bank_location, open_bank
from jitagent.doors.server import ServerConfig
from jitagent.harness.seeds import seed_bank

from ..jitagent.doors.conftest import free_port, running


def modes(top) -> dict[str, str]:
    found = {".": oct(stat.S_IMODE(top.stat().st_mode))}
    for path in top.rglob("*"):
        found[str(path.relative_to(top))] = oct(stat.S_IMODE(path.lstat().st_mode))
    return found


def test_a_servers_new_data_dir_is_its_users_alone(tmp_path):
    data = tmp_path / "data"
    config = ServerConfig(port=free_port(), data_dir=data, meta_model="scripted")

    async def main():
        async with running(config) as (server, client):
            await client.synthesize(["What is 2 + 2?"])
            return modes(data)  # the WAL and SHM files exist while the bank is open
    while_serving = asyncio.run(main())
    after = modes(data)  # the faiss index is written when the server stops
    assert {"bank.db", "bank.db-wal", "bank.db-shm"} <= set(while_serving) and "bank.db.faiss" in after
    for name, mode in {**while_serving, **after}.items():
        assert mode == ("0o700" if (data / name).is_dir() else "0o600"), (name, mode)


def test_a_bank_made_world_readable_before_is_made_private_when_opened(tmp_path):
    bank = open_bank(tmp_path / "bank.db")
    seed_bank(bank)
    bank.close()  # writes the index
    (tmp_path / "bank.db.evolve.jsonl").touch()
    for name in ("bank.db", "bank.db.faiss", "bank.db.evolve.jsonl"):
        os.chmod(tmp_path / name, 0o644)
    open_bank(tmp_path / "bank.db").close()
    assert {name: mode for name, mode in modes(tmp_path).items() if name.startswith("bank.db")} == \
        {"bank.db": "0o600", "bank.db.faiss": "0o600", "bank.db.evolve.jsonl": "0o600"}


def test_a_data_dir_made_0755_before_is_made_its_users_alone_when_a_server_opens_it(tmp_path):
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    data.chmod(0o755)  # whatever the umask

    async def main():
        async with running(ServerConfig(port=free_port(), data_dir=data, meta_model="scripted")):
            return modes(data)["."]
    assert asyncio.run(main()) == "0o700"


def test_the_default_data_dir_made_0755_before_is_made_0700(tmp_path, monkeypatch):
    data = tmp_path / "jitagent"
    data.mkdir(mode=0o755)
    data.chmod(0o755)
    monkeypatch.setenv("JITAGENT_DATA", str(data))
    open_bank(bank_location(None)).close()
    assert modes(data)["."] == "0o700"


def test_the_folder_of_a_bank_file_outside_the_data_dir_is_left_as_it_is(tmp_path):
    shared = tmp_path / "home"  # `--bank ~/bank.db`: the folder may be the user's home
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    open_bank(shared / "bank.db", cache_dir=tmp_path / "data").close()
    assert modes(shared)["."] == "0o755" and modes(shared)["bank.db"] == "0o600"
