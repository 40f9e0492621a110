"""Mutations that cost no meta-model call: an arm shown its cluster's verified solutions (examples.py), and an
arm whose solver runs with the bank's newest adapter of the solver's base model (adapters.py).

At the router's synthesis draw in a cluster, the arm to mutate first gets these, in this order, each once:
a variant enters the cluster's arms only where it is not an arm there already (nor retired) and has
something to offer on this task — solutions to show, or an adapter it does not run with yet. Then the
meta-model's mutations. So what the bank learned enters as arms that earn their traffic by reward and
tokens, as any other; none replaces its parent. (An arm with the client's functions in the model's own
chat template, `tools.client: native`, is not offered here: on BFCL it took the synthesis draws that had
found a cluster's first solution, −3.1 points; BENCHMARKS.md.)
"""

from __future__ import annotations

from collections.abc import Callable

from harness_bank import HarnessBank
from harness_bank.pools import pool_of
from jitagent.harness.spec import HarnessSpec
from jitagent.improvement.adapters import adapter_variant
from jitagent.improvement.examples import eligible, with_examples
from jitagent.tasks.task import Task


def free_variant(bank: HarnessBank, spec_of: Callable[[str], HarnessSpec], parent: HarnessSpec,
                 taken: set[str], task: Task, cluster: str,
                 base_model: str) -> tuple[HarnessSpec, str] | None:
    """The first of the parent's free variants not `taken` (the cluster's arms and retired harnesses) that has
    something to offer on `task`, and what it offers; None: none."""
    if parent.prompts.examples is None and parent.solution_format is not None:
        variant = with_examples(parent)
        if variant.id not in taken and eligible(bank, spec_of, variant, task, cluster):
            return variant, "shown the cluster's verified solutions"
    if parent.adapter is None:
        adapter = next((a for a in bank.list_adapters()  # one trained on this pool's runs: its own text only
                        if a.base_model == base_model and a.usable and a.pool == pool_of(cluster)), None)
        if adapter is not None and (variant := adapter_variant(parent, adapter)).id not in taken:
            return variant, f"its solver with adapter {adapter.id}"
    return None
