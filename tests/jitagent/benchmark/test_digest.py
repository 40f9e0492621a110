"""The runtime's digest: what a fixed unit's reuse and the per-seed check compare."""

from jitagent.benchmark.digest import ROOT, RUNTIME_SOURCES, runtime_digest


def test_the_runtime_digest_covers_the_seeds_and_the_runtime(tmp_path):
    assert runtime_digest() == runtime_digest() and len(runtime_digest()) == 16
    for source in RUNTIME_SOURCES:
        assert (ROOT / source).exists(), source
    (tmp_path / "seeds").mkdir()
    before = runtime_digest(tmp_path)
    (tmp_path / "seeds" / "x.yaml").write_text("name: x\n")
    assert runtime_digest(tmp_path) != before  # a seed's change is a runtime change
