import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def bench_script():
    """Loads a bench/ script as a module, registered in sys.modules first (its dataclasses look it up)."""
    def load(name: str):
        if name not in sys.modules:
            spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
            sys.modules[name] = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(sys.modules[name])
        return sys.modules[name]
    return load


@pytest.fixture(scope="session")
def embedder():
    """The real all-MiniLM-L6-v2 embedder, loaded once per test session."""
    from harness_bank.embedder import shared_embedder

    return shared_embedder()


@pytest.fixture
def bank(tmp_path, embedder):
    from harness_bank import HarnessBank

    b = HarnessBank(tmp_path / "bank.db", embedder=embedder)
    yield b
    b.close()


@pytest.fixture
def seeded_bank(bank):
    from jitagent.harness.seeds import seed_bank

    seed_bank(bank)
    return bank


@pytest.fixture(scope="session")
def postgres_server():
    """A throwaway PostgreSQL for the session (the Debian package's binaries, a free loopback port)."""
    from jitagent.fleet.services import FAST_UNSAFE, local_postgres, postgres_missing

    if problem := postgres_missing():
        pytest.skip(problem)
    with local_postgres(FAST_UNSAFE) as url:
        yield url


@pytest.fixture
def postgres_url(postgres_server, request):
    """A fresh, empty database on the session's PostgreSQL."""
    from jitagent.fleet.services import create_database

    return create_database(postgres_server, "t_" + digest_of(request.node.nodeid))


@pytest.fixture(scope="session")
def redis_server():
    """A throwaway redis-server for the session."""
    from jitagent.fleet.services import local_redis, redis_missing

    if problem := redis_missing():
        pytest.skip(problem)
    with local_redis() as url:
        yield url


def digest_of(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:16]
