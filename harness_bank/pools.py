"""Pools: the namespaces a bank's clusters live in. A cluster `POOL/type:T` is the pool's (a tenant's memory,
or one tenants share); one without (`type:T`) is a deployment's that has no tenants. What a pool's tasks
are shown and its callers may read — past outcomes, harnesses that earned reward, harnesses listed — is
its own and the seeds'; no pool reads everything. The bank knows pools only as cluster names: who may use
one is the solving layer's to say.
"""

from __future__ import annotations

import json

from harness_bank.records import BankError, HarnessRecord
from harness_bank.store import Store

SEED = "h.origin = 'seed'"
NAME = r"[a-z0-9][a-z0-9._-]{0,63}"  # a pool's name (a tenant's too): no ':' or '/', so clusters parse


def pool_of(cluster: str) -> str:
    """The pool a cluster is in ("" for none): a pool's name has neither ':' nor '/'."""
    head, slash, _ = cluster.partition("/")
    return head if slash and ":" not in head else ""


def prefix(pool: str) -> str:
    """What every cluster name of `pool` starts with."""
    return f"{pool}/" if pool else ""


def in_pool(column: str, pool: str) -> tuple[str, tuple]:
    """SQL that holds where `column` (a cluster name) is in `pool` — always, for no pool — and its
    parameters. `substr`, not LIKE: a pool's name may hold '_'."""
    if not pool:
        return "1 = 1", ()
    return f"substr({column}, 1, {len(prefix(pool))}) = ?", (prefix(pool),)


def earned(pool: str) -> tuple[str, tuple]:
    """SQL that holds for a harness `h` that earned reward in `pool`'s clusters (anywhere, for no pool)."""
    where, params = in_pool("o.cluster", pool)
    return f"EXISTS (SELECT 1 FROM outcomes o WHERE o.harness_id = h.id AND o.reward > 0 AND {where})", params


def readable(pool: str) -> tuple[str, tuple]:
    """SQL that holds for a harness `h` that `pool` may read: a seed, or one run, judged or written for its
    clusters; every harness, for no pool."""
    if not pool:
        return "1 = 1", ()
    where, params = in_pool("x.cluster", pool)
    used = " OR ".join(f"EXISTS (SELECT 1 FROM {table} x WHERE x.harness_id = h.id AND {where})"
                       for table in ("runs", "outcomes", "toolmaking"))
    return f"({SEED} OR {used})", params * 3


class Catalog:
    """What a pool holds: the harnesses it may read (no pool: all of them), and the runs under a name (a
    tenant's run ids: what its quota counts)."""

    def __init__(self, store: Store):
        self.store = store

    def get(self, harness_id: str, pool: str = "") -> HarnessRecord:
        """The harness; BankError for one not in the bank, or one `pool` may not read (said alike)."""
        where, params = readable(pool)
        rows = self.store.query(f"SELECT * FROM harnesses h WHERE h.id = ? AND {where}",
                                (harness_id, *params))
        if not rows:
            raise BankError(f"unknown harness id {harness_id!r}")
        return harness_record(rows[0])

    def page(self, origin: str | None, limit: int, offset: int, pool: str = "") -> list[HarnessRecord]:
        where, params = readable(pool)
        if origin:
            where, params = f"{where} AND h.origin = ?", (*params, origin)
        sql = f"SELECT * FROM harnesses h WHERE {where} ORDER BY h.created_at, h.id LIMIT ? OFFSET ?"
        return [harness_record(r) for r in self.store.query(sql, (*params, limit, offset))]

    def lineage(self, harness_id: str, pool: str = "") -> list[HarnessRecord]:
        """The harness and its ancestors, newest first, as far as `pool` may read them."""
        chain = [self.get(harness_id, pool)]
        while chain[-1].parent_id:
            try:
                chain.append(self.get(chain[-1].parent_id, pool))
            except BankError:
                break
        return chain


    def runs_named(self, prefix: str) -> int:
        """How many runs have an id that starts with `prefix` (not a range on the id: PostgreSQL's
        collation need not order punctuation as bytes do)."""
        return self.store.query("SELECT COUNT(*) FROM runs WHERE substr(id, 1, ?) = ?",
                                (len(prefix), prefix))[0][0]


def harness_record(row) -> HarnessRecord:
    return HarnessRecord(id=row["id"], name=row["name"], description=row["description"],
                         parent_id=row["parent_id"], origin=row["origin"], generator=row["generator"],
                         created_at=row["created_at"], spec=json.loads(row["spec"]))
