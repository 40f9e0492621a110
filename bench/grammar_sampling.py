"""Tokens per second of the meta-model's synthesis output: free text, llama-cpp-python's grammar
chain (the grammar checked on the whole vocabulary first), and `GrammarAfterTopK` (the top 256
first). Side by side in one process, interleaved per prompt, same seeds; also checks that both
grammar chains write the same text.

Usage: python bench/grammar_sampling.py [--model qwen2.5-coder-0.5b] [--tasks 8] [--seeds 3]
"""

import argparse
import json
import platform
import statistics
import time
from datetime import date
from pathlib import Path

from llama_cpp import Llama, LlamaGrammar
from rich.progress import track

from jitagent.harness.seeds import load_seeds
from jitagent.improvement.synthesis.edit import edit_schema
from jitagent.improvement.synthesis.prompt import synthesis_messages
from jitagent.models.base import render_chatml
from jitagent.models.gguf import model_path
from jitagent.models.grammar_sampling import FastGrammarLlama
from jitagent.tasks.task import load_suite, spread_over_types

OUT = Path(__file__).parent / "out"
REFERENCES = ("program_of_thought", "least_to_most", "codeact")


def timed(llm: Llama, prompt: list[int], schema: str | None, seed: int) -> tuple[str, int, float]:
    llm.create_completion(prompt, max_tokens=1, temperature=0.0)  # the prompt is cached: time sampling only
    grammar = LlamaGrammar.from_json_schema(schema, verbose=False) if schema else None
    start, pieces = time.monotonic(), []
    for chunk in llm.create_completion(prompt, max_tokens=120, temperature=1.0, seed=seed, grammar=grammar,
                                       stream=True, repeat_penalty=1.0):
        pieces.append(chunk["choices"][0]["text"])
    return "".join(pieces), len(pieces), time.monotonic() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--suite", default="reasoning_gym")
    parser.add_argument("--tasks", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    seeds = load_seeds()
    references = [seeds[name] for name in REFERENCES]
    schema = json.dumps(edit_schema(list(REFERENCES), ["python"]))
    path = str(model_path(args.model))
    arms = {name: cls(model_path=path, n_ctx=4096, n_threads=2, n_batch=256, verbose=False) for name, cls in
            (("free", Llama), ("grammar, whole vocabulary first", Llama),
             ("grammar, top 256 first", FastGrammarLlama))}
    rates: dict[str, list[float]] = {name: [] for name in arms}
    same = total = 0
    tasks = spread_over_types(load_suite(args.suite, "learn"), args.tasks)
    for task in track(tasks, description="prompts"):
        prompt = render_chatml(synthesis_messages(task.prompt, ["python"], references))
        for seed in range(args.seeds):
            texts = {}
            for name, llm in arms.items():
                tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
                texts[name], n, wall = timed(llm, tokens, None if name == "free" else schema, seed)
                rates[name].append(n / wall)
            total += 1
            same += texts["grammar, whole vocabulary first"] == texts["grammar, top 256 first"]
    medians = {name: statistics.median(r) for name, r in rates.items()}
    result = {"date": date.today().isoformat(), "machine": f"{platform.machine()}, 2 cores",
              "model": args.model,
              "generations_per_arm": total, "median_tokens_per_s": medians,
              "identical_grammar_outputs": f"{same}/{total}"}
    OUT.mkdir(exist_ok=True)
    (OUT / f"grammar_sampling_{args.model}.json").write_text(json.dumps(result, indent=2))
    base = medians["grammar, whole vocabulary first"]
    for name, value in medians.items():
        print(f"| {name} | {value:.1f} | {value / base:.2f}x |")
    print(f"identical constrained outputs: {same}/{total}")


if __name__ == "__main__":
    main()
