"""LoRA SFT of the embedded solver on CPU: the shipped GGUF loaded into `transformers` (dequantized), a `peft`
LoRA trained on chat records with the loss on the assistant's tokens only, resumable from its checkpoint.

The records are rendered exactly as the embedded model is prompted (`render_chatml`), so the adapter learns
the turns the solver itself is asked for. Same records, config and machine give the same weights: the
shuffle, the LoRA's initialization and its dropout all draw from `seed`. Heavy (torch, transformers, peft):
imported only by `jitagent train` and the bench.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

# Qwen2's and Llama's linear layers: attention and MLP (the GGUF writer maps each to llama.cpp's name)
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
IGNORED = -100  # the label torch's cross-entropy skips: the prompt's tokens teach nothing


class TrainConfig(BaseModel):
    """How an adapter is trained; part of its lineage (the bank keeps it beside the adapter)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    rank: int = Field(16, ge=1, le=256, description="LoRA rank")
    alpha: float = Field(32.0, gt=0, le=1024, description="LoRA alpha (the update is scaled by alpha/rank)")
    dropout: float = Field(0.05, ge=0, le=0.9, description="LoRA dropout")
    epochs: int = Field(2, ge=1, le=50, description="passes over the records")
    learning_rate: float = Field(2e-4, gt=0, le=1, description="AdamW's first learning rate (linear to 0)")
    weight_decay: float = Field(0.01, ge=0, le=1, description="AdamW's weight decay (regularizes the LoRA)")
    accumulate: int = Field(4, ge=1, le=256, description="records per optimizer step")
    max_examples: int = Field(400, ge=1, le=100_000, description="records trained on at most (the first)")
    max_tokens: int = Field(768, ge=32, le=8192, description="a longer record is skipped, not cut")
    seed: int = Field(0, ge=0, le=2**31 - 1, description="shuffle, initialization and dropout")
    save_every: int = Field(20, ge=1, le=100_000, description="optimizer steps between checkpoints")


@dataclass
class Trained:
    """The LoRA's weights by PEFT name (`...q_proj.lora_A.weight`), its PEFT config, and what it cost."""

    weights: dict  # name -> torch.Tensor
    peft_config: dict
    model_type: str  # the base model's architecture as transformers names it (qwen2, llama)
    heads: int
    kv_heads: int
    stats: dict = field(default_factory=dict)


def data_digest(records: Sequence[dict]) -> str:
    """What the adapter learned from, as one digest: the records' messages in order, and where each one's
    learned turns begin."""
    canonical = json.dumps([[r["messages"], r.get("prompt_messages", 0)] for r in records], sort_keys=True,
                           separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def encode(messages: list[dict], tokenize: Callable[[str], list[int]],
           learn_from: int = 0) -> tuple[list[int], list[int]]:
    """Token ids of `messages` rendered as ChatML (as `render_chatml` prompts the model) and their labels:
    the text and end token of an assistant turn from message `learn_from` on are learned (the prompt's
    few-shot answers before it are not: they are the harness's, the same in every record), everything else
    is IGNORED."""
    ids: list[int] = []
    labels: list[int] = []
    for index, m in enumerate(messages):
        learned = m["role"] == "assistant" and index >= learn_from
        for piece, learn in ((f"<|im_start|>{m['role']}\n", False), (m["content"], learned),
                             ("<|im_end|>", learned), ("\n", False)):
            tokens = tokenize(piece) if piece else []
            ids += tokens
            labels += tokens if learn else [IGNORED] * len(tokens)
    return ids, labels


def load_base(gguf_path: Path):
    """The GGUF's model (dequantized to fp32) and tokenizer, in transformers."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # no hub, ever: everything comes from the file
    # The caller says it is loading. transformers' bars (one line of carriage returns when piped) and its
    # deprecation warnings are the library's, not the user's to act on; an error still raises.
    with contextlib.redirect_stderr(io.StringIO()):
        tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
        model = AutoModelForCausalLM.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name,
                                                     dtype=torch.float32)
    return model, tokenizer


def train(records: Sequence[dict], gguf_path: Path, config: TrainConfig, workdir: Path,
          on_step: Callable[[int, int, dict], None] | None = None) -> Trained:
    """A LoRA of the GGUF's model trained on `records` (`{"messages": [...]}`). `workdir` keeps the
    checkpoint: a run stopped midway resumes where it was when called again with the same records and
    config. `on_step(step, steps, info)` once loaded (step 0) and after every optimizer step (loss,
    examples/s)."""
    import torch

    torch.manual_seed(config.seed)
    torch.set_num_threads(os.cpu_count() or 2)
    base, tokenizer = load_base(gguf_path)
    tokenize = lambda text: tokenizer(text, add_special_tokens=False).input_ids  # noqa: E731
    encoded = [encode(r["messages"], tokenize, r.get("prompt_messages", 0))
               for r in records[:config.max_examples]]
    usable = [e for e in encoded if len(e[0]) <= config.max_tokens and any(x != IGNORED for x in e[1])]
    if not usable:
        raise ValueError(f"none of the {len(encoded)} records fits in max_tokens {config.max_tokens} "
                         "with an assistant turn to learn")
    fingerprint = f"{gguf_path.name}:{config.model_dump_json()}:{data_digest(records[:config.max_examples])}"
    run = _Run(base, usable, config, workdir / "checkpoint.pt", fingerprint)
    if on_step is not None:
        on_step(0, run.steps, {})
    while run.state["step"] < run.steps:
        info = run.step()
        if on_step is not None:
            on_step(run.state["step"], run.steps, info)
    return run.trained(skipped=len(encoded) - len(usable))


class _Run:
    """One training run: the LoRA over the base, its optimizer and schedule, the batches of every epoch in
    order, and the state a checkpoint keeps (restored where one with the same fingerprint exists)."""

    def __init__(self, base, usable: list[tuple[list[int], list[int]]], config: TrainConfig, checkpoint: Path,
                 fingerprint: str):
        import torch
        from peft import LoraConfig, get_peft_model, set_peft_model_state_dict

        self.base, self.usable, self.config = base, usable, config
        self.checkpoint, self.fingerprint = checkpoint, fingerprint
        self.lora = LoraConfig(r=config.rank, lora_alpha=config.alpha, lora_dropout=config.dropout,
                               target_modules=list(TARGETS), task_type="CAUSAL_LM")
        self.model = get_peft_model(base, self.lora)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(self.params, lr=config.learning_rate,
                                           weight_decay=config.weight_decay)
        orders = [random.Random(config.seed + epoch).sample(range(len(usable)), len(usable))
                  for epoch in range(config.epochs)]
        self.batches = [order[i:i + config.accumulate] for order in orders
                        for i in range(0, len(usable), config.accumulate)]
        self.steps = len(self.batches)
        self.schedule = torch.optim.lr_scheduler.LambdaLR(self.optimizer,
                                                          lambda s: max(0.0, 1 - s / self.steps))
        self.state = {"step": 0, "losses": [], "train_s": 0.0, "tokens": 0}
        saved = torch.load(checkpoint, weights_only=False) if checkpoint.exists() else None
        if saved is not None and saved["fingerprint"] == fingerprint:
            set_peft_model_state_dict(self.model, saved["weights"])
            self.optimizer.load_state_dict(saved["optimizer"])
            self.schedule.load_state_dict(saved["schedule"])
            torch.set_rng_state(saved["rng"])
            self.state = saved["state"]
        self.model.train()

    def step(self) -> dict:
        """One optimizer step over the next batch (its records' losses averaged); the loss and examples/s."""
        import torch

        start, batch, state = time.monotonic(), self.batches[self.state["step"]], self.state
        loss_sum = 0.0
        for i in batch:
            ids, labels = self.usable[i]
            out = self.model(input_ids=torch.tensor([ids]), labels=torch.tensor([labels]))
            (out.loss / len(batch)).backward()
            loss_sum += out.loss.item()
            state["tokens"] += len(ids)
        torch.nn.utils.clip_grad_norm_(self.params, 1.0)
        self.optimizer.step()
        self.schedule.step()
        self.optimizer.zero_grad()
        state["step"] += 1
        state["losses"].append(loss_sum / len(batch))
        state["train_s"] += time.monotonic() - start
        if state["step"] % self.config.save_every == 0 or state["step"] == self.steps:
            _save(self.checkpoint, {"fingerprint": self.fingerprint, "weights": self.weights(),
                                    "optimizer": self.optimizer.state_dict(),
                                    "schedule": self.schedule.state_dict(), "rng": torch.get_rng_state(),
                                    "state": state})
        return {"loss": state["losses"][-1], "examples_s": len(batch) / (time.monotonic() - start)}

    def weights(self) -> dict:
        from peft import get_peft_model_state_dict

        state = get_peft_model_state_dict(self.model, save_embedding_layers=False)
        return {name: tensor.detach().clone() for name, tensor in state.items()}

    def trained(self, skipped: int) -> Trained:
        state, config = self.state, self.base.config
        stats = {"examples": len(self.usable), "skipped": skipped, "steps": self.steps,
                 "tokens": state["tokens"], "train_s": round(state["train_s"], 1),
                 "first_loss": state["losses"][0], "last_loss": state["losses"][-1]}
        return Trained(weights=self.weights(), peft_config=self.lora.to_dict(), model_type=config.model_type,
                       heads=config.num_attention_heads, kv_heads=config.num_key_value_heads, stats=stats)


def _save(path: Path, payload: dict) -> None:
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".partial")
    torch.save(payload, tmp)
    os.replace(tmp, path)  # a checkpoint is whole or absent
