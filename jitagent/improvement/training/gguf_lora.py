"""A trained LoRA as llama.cpp loads it: a GGUF of type `adapter` (written with `gguf`, the format's own
writer), and as vLLM loads it: a PEFT folder (adapter_config.json + adapter_model.safetensors), zipped.

GGUF names each pair of matrices after the base tensor it adapts (`blk.3.attn_q.weight.lora_a` and
`.lora_b`). llama.cpp's converter stores a Llama model's q and k rows permuted (its rope layout) and
transformers undoes that when it loads the GGUF, so a Llama adapter's q/k `B` matrices are permuted back here
the same way; Qwen2 is stored unpermuted. Same weights give the same bytes: no timestamps, fixed order.
"""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import numpy as np

from jitagent.improvement.training.lora import Trained

# transformers' module path -> llama.cpp's tensor name
GGUF_NAMES = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
              "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
              "mlp.down_proj": "ffn_down"}
ARCHITECTURES = {"qwen2": "qwen2", "llama": "llama"}  # transformers' model_type -> GGUF's architecture
PEFT_NAME = re.compile(r"base_model\.model\.model\.layers\.(\d+)\.(\w+\.\w+)\.lora_([AB])\.weight")


def permute_rows(weights: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's rope layout of a Llama q/k projection's output rows."""
    return (weights.reshape(heads, 2, weights.shape[0] // heads // 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))


def gguf_tensors(trained: Trained) -> list[tuple[str, np.ndarray]]:
    """(GGUF name, float32 matrix) for every LoRA matrix, in layer and name order."""
    tensors = []
    for name, tensor in sorted(trained.weights.items()):
        match = PEFT_NAME.fullmatch(name)
        if match is None or match.group(2) not in GGUF_NAMES:
            raise ValueError(f"an adapter tensor llama.cpp has no name for: {name}")
        layer, module, which = match.groups()
        matrix = tensor.float().numpy()
        if trained.model_type == "llama" and which == "B" and module.endswith(("q_proj", "k_proj")):
            matrix = permute_rows(matrix, trained.heads if module.endswith("q_proj") else trained.kv_heads)
        tensors.append((f"blk.{layer}.{GGUF_NAMES[module]}.weight.lora_{which.lower()}",
                        np.ascontiguousarray(matrix, dtype=np.float32)))
    return tensors


def write_gguf(trained: Trained, path: Path) -> None:
    import gguf

    if trained.model_type not in ARCHITECTURES:
        raise ValueError(f"no GGUF LoRA writer for architecture {trained.model_type!r}")
    writer = gguf.GGUFWriter(str(path), ARCHITECTURES[trained.model_type])
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(trained.peft_config["lora_alpha"]))
    for name, matrix in gguf_tensors(trained):
        writer.add_tensor(name, matrix)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def peft_zip(trained: Trained, base_model: str) -> bytes:
    """The PEFT folder vLLM's `--lora-modules NAME=DIR` serves, as a zip of fixed bytes."""
    from safetensors.torch import save

    config = {k: (sorted(v) if isinstance(v, set) else v) for k, v in trained.peft_config.items()}
    config["base_model_name_or_path"] = base_model
    files = {"adapter_config.json": json.dumps(config, sort_keys=True, indent=1, default=str).encode(),
             "adapter_model.safetensors": save({k: v.contiguous()
                                                for k, v in sorted(trained.weights.items())})}
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for name, data in files.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)
    return buffer.getvalue()
