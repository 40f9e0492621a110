"""A real LoRA of SmolLM2-135M, end to end: trained for a few steps on real exported runs (the real runtime,
sandbox and verifier; a scripted solver whose programs are right), written as a GGUF LoRA, kept in the bank,
loaded by llama.cpp in process and served by a real llama.cpp server under its own model name. It changes the
model's output; the same data and seed give the same adapter, also when training was cut short and resumed."""

import asyncio
import dataclasses
import json
import subprocess
import sys

import pytest

from jitagent.harness.seeds import spec_reader
from jitagent.improvement.adapters import resolve
from jitagent.improvement.training.export import ExportConfig, sft_records
from jitagent.improvement.training.lora import TrainConfig
from jitagent.improvement.training.trainer import train_adapter
from jitagent.models.embedded import EmbeddedModel
from jitagent.models.gguf import model_path
from jitagent.models.openai_http import OpenAICompatibleModel

from ...models.test_openai_http import free_port, wait_for
from .test_correct import POT, record, task

pytestmark = pytest.mark.slow
BASE = "smollm2-135m"
CONFIG = TrainConfig(rank=4, alpha=8, epochs=3, learning_rate=3e-3, accumulate=1, dropout=0.0, save_every=2)


class Stop(Exception):
    pass


@pytest.fixture(scope="module")
def trained(tmp_path_factory, embedder):
    """Three verified runs exported from a real bank, and an adapter trained on them."""
    from harness_bank import HarnessBank
    from jitagent.harness.seeds import seed_bank

    folder = tmp_path_factory.mktemp("lora")
    bank = HarnessBank(folder / "bank.db", embedder=embedder)
    seed_bank(bank)
    for n in (2, 3, 4):
        record(bank, task(n), 7)
    records = list(sft_records(bank, spec_reader(bank), ExportConfig()))
    adapter = train_adapter(bank, records, base_model=BASE, config=CONFIG, name="times", workdir=folder / "a")
    yield bank, records, adapter
    bank.close()


def test_training_learns_and_the_adapter_keeps_its_lineage(trained):
    bank, records, adapter = trained
    assert len(records) == 3
    stats = adapter.stats
    assert stats["examples"] == 3 and stats["steps"] == 9 and stats["last_loss"] < stats["first_loss"]
    assert stats["tokens"] > 0 and stats["train_s"] > 0
    assert adapter.base_model == BASE and adapter.config["rank"] == 4 and adapter.parent_id is None
    gguf = bank.adapter_file(adapter.id)
    assert gguf[:4] == b"GGUF"


def test_the_same_data_and_seed_give_the_same_adapter_also_after_a_resumed_run(trained, tmp_path):
    bank, records, adapter = trained

    def stop_at_five(step, steps, info):
        if step == 5:  # step 0 says the model is loaded
            raise Stop

    with pytest.raises(Stop):
        train_adapter(bank, records, base_model=BASE, config=CONFIG, name="times", workdir=tmp_path,
                      on_step=stop_at_five)
    assert (tmp_path / "checkpoint.pt").exists()  # saved at step 4: the rerun starts there
    again = train_adapter(bank, records, base_model=BASE, config=CONFIG, name="times", workdir=tmp_path)
    assert again.id == adapter.id


def prompt(n: int) -> list[dict]:
    from jitagent.improvement.training.export import opening

    return opening(POT, f"What is {n} times 7?")


def test_llama_cpp_runs_with_the_adapter_and_without_it_on_one_context(trained):
    bank, _, adapter = trained
    base = EmbeddedModel(BASE, n_ctx=2048)
    adapted = base.with_adapter(resolve(bank, adapter.id))

    def reply(model):
        return asyncio.run(model.complete(prompt(5), max_tokens=24)).text

    before, with_it, after = reply(base), reply(adapted), reply(base)
    assert with_it != before and after == before  # the adapter is set per call, then cleared


def test_a_context_keeps_only_its_most_recently_used_adapters_loaded(trained, tmp_path, monkeypatch):
    from jitagent.models import interruptible
    from jitagent.models.embedded import _load

    bank, _, adapter = trained
    first = resolve(bank, adapter.id)
    second = dataclasses.replace(first, path=tmp_path / "copy.gguf")
    second.path.write_bytes(first.path.read_bytes())  # another file: llama.cpp loads it as another adapter
    llm, _ = _load(BASE, 2048, "default")
    monkeypatch.setattr(llm, "max_loaded_adapters", 1)
    freed = []
    free = interruptible.C.llama_adapter_lora_free
    monkeypatch.setattr(interruptible.C, "llama_adapter_lora_free", lambda a: (freed.append(a), free(a)))
    base = EmbeddedModel(BASE, n_ctx=2048)

    def reply(served):
        return asyncio.run(base.with_adapter(served).complete(prompt(5), max_tokens=24)).text

    before = reply(first)
    freed.clear()  # what earlier tests left loaded on this shared context went with that first call
    assert reply(second) == before and list(llm._adapters) == [second.path] and len(freed) == 1
    assert reply(first) == before and list(llm._adapters) == [first.path]  # loaded again when asked
    assert len({id(a) for a in freed}) == len(freed) == 2  # each freed once: the first, then the second


def test_a_llama_cpp_server_serves_the_adapter_under_its_own_name(trained, tmp_path):
    bank, _, adapter = trained
    served = resolve(bank, adapter.id)
    config = tmp_path / "models.json"
    config.write_text(json.dumps({"host": "127.0.0.1", "port": (port := free_port()), "models": [
        {"model": str(model_path(BASE)), "model_alias": BASE, "n_ctx": 2048, "verbose": False},
        {"model": str(model_path(BASE)), "model_alias": served.served_name, "lora_path": str(served.path),
         "n_ctx": 2048, "verbose": False}]}))
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--config_file", str(config)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        url = wait_for(f"http://127.0.0.1:{port}", proc)
        base = OpenAICompatibleModel(url, BASE)
        adapted = base.with_adapter(served)
        assert adapted.model == served.served_name

        def reply(model):
            return asyncio.run(model.complete(prompt(5), max_tokens=24)).text

        assert reply(adapted) != reply(base)
    finally:
        proc.terminate()
        proc.wait(10)


def test_loading_the_base_prints_nothing_of_the_librarys_own(capfd):
    """`train` says it is loading on its own line; transformers' bars (a line of carriage returns when
    piped) and deprecation warnings never reach the user's terminal."""
    from jitagent.improvement.training.lora import load_base

    load_base(model_path("smollm2-135m"))
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
