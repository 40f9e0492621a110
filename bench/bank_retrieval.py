"""Retrieval latency and insert throughput of the bank's index: exact flat vs HNSW.

Vectors are synthetic but shaped like sentence embeddings (a normalized mixture of 300
topics), so that recall@10 is meaningful; embedding 100k real texts would take ~6 minutes
and measure the embedder, not the index. The end-to-end `HarnessBank.search` and
`record_outcome` (real MiniLM, SQLite, faiss) are measured at 1k stored experiences.
Usage: python bench/bank_retrieval.py [--sizes 1000 10000 100000] [--queries 1000]
"""

import argparse
import platform
import resource
import statistics
import tempfile
import time
from datetime import date

import faiss
import numpy as np

from harness_bank.index import new_index

DIM = 384


def synthetic(n: int, rng: np.random.Generator, centers: np.ndarray) -> np.ndarray:
    picks = rng.integers(0, len(centers), n)
    x = centers[picks] + 0.35 * rng.standard_normal((n, DIM)).astype(np.float32) / np.sqrt(DIM) * 4
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def pct(values, p):
    return float(np.percentile(values, p))


def bench_index(kind: str, data: np.ndarray, queries: np.ndarray) -> dict:
    index = new_index(kind)
    start = time.perf_counter()
    index.add_with_ids(data, np.arange(len(data), dtype=np.int64))
    build = time.perf_counter() - start
    latencies, results = [], []
    for q in queries:
        t = time.perf_counter()
        _, ids = index.search(q[None, :], 10)
        latencies.append((time.perf_counter() - t) * 1000)
        results.append(ids[0])
    return {"build_s": build, "inserts_per_s": len(data) / build, "p50_ms": pct(latencies, 50),
            "p99_ms": pct(latencies, 99), "ids": results, "bytes": faiss.serialize_index(index).nbytes}


def end_to_end(n_outcomes: int = 1000) -> dict:
    from harness_bank import HarnessBank, Outcome
    from jitagent.harness.seeds import load_seeds, seed_bank

    with tempfile.TemporaryDirectory() as tmp:
        bank = HarnessBank(f"{tmp}/bank.db")
        seed_bank(bank)
        harness = load_seeds()["codeact"].id
        texts = [f"Task {i}: compute the sum of the numbers in file_{i % 97}.txt and report item {i % 13}"
                 for i in range(n_outcomes)]
        bank.embedder.embed(texts)  # warm the cache: measure the store and index, not MiniLM
        start = time.perf_counter()
        for i, text in enumerate(texts):
            bank.record_outcome(Outcome(harness_id=harness, task_id=f"t{i}", task_text=text,
                                        reward=float(i % 2), prompt_tokens=50, completion_tokens=50,
                                        wall_s=1.0, cluster="c"))
        insert_rate = n_outcomes / (time.perf_counter() - start)
        latencies = []
        for i in range(200):
            t = time.perf_counter()
            bank.search(texts[(i * 7) % n_outcomes], k=3)
            latencies.append((time.perf_counter() - t) * 1000)
        fresh = []
        for i in range(50):
            t = time.perf_counter()
            bank.search(f"a brand new task text number {i} about parsing dates", k=3)
            fresh.append((time.perf_counter() - t) * 1000)
        bank.close()
    return {"outcomes_per_s": insert_rate, "search_p50_ms": pct(latencies, 50),
            "search_p99_ms": pct(latencies, 99), "fresh_text_p50_ms": pct(fresh, 50)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--queries", type=int, default=1000)
    args = parser.parse_args()
    faiss.omp_set_num_threads(1)  # single-query latency, as a server sees it
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((300, DIM)).astype(np.float32)
    print(f"{date.today()} on {platform.node()}, {faiss.omp_get_max_threads()} faiss thread, {args.queries} "
          "queries\n")
    print("| stored | index | insert/s | p50 ms | p99 ms | recall@10 | index MB |")
    print("|---|---|---|---|---|---|---|")
    for n in args.sizes:
        data = synthetic(n, rng, centers)
        queries = synthetic(args.queries, rng, centers)
        flat = bench_index("flat", data, queries)
        hnsw = bench_index("hnsw", data, queries)
        recall = statistics.fmean(len(set(a) & set(b)) / 10 for a, b in zip(flat["ids"], hnsw["ids"]))
        for name, r, rec in (("flat (exact)", flat, 1.0), ("hnsw M=32", hnsw, recall)):
            print(f"| {n:,} | {name} | {r['inserts_per_s']:,.0f} | {r['p50_ms']:.3f} | {r['p99_ms']:.3f} | "
                  f"{rec:.3f} | {r['bytes'] / 2**20:.1f} |")
    print(f"\npeak RSS of this process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    e2e = end_to_end()
    print("\nend to end at 1,000 stored outcomes (real MiniLM, SQLite, HNSW): record_outcome "
          f"{e2e['outcomes_per_s']:.0f}/s; "
          f"search (repeated text, cached embedding) p50 {e2e['search_p50_ms']:.2f} ms p99 "
          f"{e2e['search_p99_ms']:.2f} ms; "
          f"search of a new text p50 {e2e['fresh_text_p50_ms']:.1f} ms (embedding included)")


if __name__ == "__main__":
    main()
