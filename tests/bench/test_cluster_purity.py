"""bench/cluster_purity.py: where an untyped stream's tasks were clustered, by their (unsent) type."""

import json
import sqlite3


def test_tasks_are_counted_by_the_cluster_their_first_run_joined(bench_script, tmp_path):
    rows = [{"arm": "jit", "task_id": t, "repeat": 0, "type": kind, "order": i, "reward": reward}
            for i, (t, kind, reward) in enumerate([("a", "sum", 1.0), ("b", "sum", 0.5), ("c", "sort", 0.0),
                                                   ("d", "sort", 1.0)])]
    (tmp_path / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    db = sqlite3.connect(tmp_path / "jit-stream.db")
    db.execute("CREATE TABLE runs (task_id TEXT, cluster TEXT, created_at REAL)")
    db.executemany("INSERT INTO runs VALUES (?, ?, ?)", [
        ("a", "type:sum", 1), ("b", "auto:1f", 2), ("c", "type:sum", 3),
        ("d", "auto:2e", 4), ("d", "type:sort", 5)])  # a later run of d (practice) does not move it
    db.commit()
    table = bench_script("cluster_purity").purity(tmp_path, "jit").splitlines()
    assert table[0].startswith("jit: 4 stream tasks with a run in the bank")
    assert table[4:] == ["| sort | 0 | 1 (0.00) | 1 (1.00) |", "| sum | 1 (1.00) | 0 | 1 (0.50) |",
                         "| all | 1 (1.00) | 1 (0.00) | 2 (0.75) |"]
