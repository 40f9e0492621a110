"""A run's trajectories read back as a run writes them, or gzipped as a committed ledger keeps them."""

import gzip
import json

from jitagent.benchmark.ledger import read_traces

TRACES = [{"arm": "a", "task_id": "t1", "repeat": 0}, {"arm": "b", "task_id": "t1", "repeat": 0}]


def test_traces_are_read_plain_or_gzipped_in_the_order_written_and_none_where_there_are_none(tmp_path):
    assert read_traces(tmp_path) == []
    packed = tmp_path / "packed"
    packed.mkdir()
    with gzip.open(packed / "trajectories.jsonl.gz", "wt") as f:
        f.writelines(json.dumps(t) + "\n" for t in TRACES)
    assert read_traces(packed) == TRACES
    (tmp_path / "trajectories.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TRACES[::-1]) + "\n")
    assert read_traces(tmp_path) == TRACES[::-1]  # a blank line is no trace
