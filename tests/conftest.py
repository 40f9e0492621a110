import pytest


@pytest.fixture(scope="session")
def embedder():
    """The real all-MiniLM-L6-v2 embedder, loaded once per test session."""
    from harness_bank.bank import shared_embedder

    return shared_embedder()


@pytest.fixture
def bank(tmp_path, embedder):
    from harness_bank import HarnessBank

    b = HarnessBank(tmp_path / "bank.db", embedder=embedder)
    yield b
    b.close()


@pytest.fixture
def seeded_bank(bank):
    from jitagent.catalog import seed_bank

    seed_bank(bank)
    return bank
