"""Grammar after top-k: the same tokens as llama-cpp-python's chain, from fewer grammar checks
(real SmolLM2)."""

import json

import pytest
from llama_cpp import Llama, LlamaGrammar

from jitagent.models.gguf import model_path
from jitagent.models.grammar_sampling import FastGrammarLlama

pytestmark = pytest.mark.slow

SCHEMA = json.dumps({"type": "object", "properties": {"tool": {"type": "string", "enum": ["python", "shell"]},
                                                      "steps": {"type": "integer"},
                                                      "note": {"type": "string", "maxLength": 40}},
                     "required": ["tool", "steps", "note"], "additionalProperties": False})
PROMPT = "<|im_start|>user\nPick a tool for counting letters, as JSON.<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def models():
    loaded = [cls(model_path=str(model_path("smollm2-135m")), n_ctx=512, n_threads=2, verbose=False)
              for cls in (Llama, FastGrammarLlama)]
    yield loaded
    for llm in loaded:
        llm.close()


def generate(llm, grammar: str, temperature: float, seed: int, schema: bool = True) -> str:
    g = (LlamaGrammar.from_json_schema(grammar, verbose=False) if schema
         else LlamaGrammar.from_string(grammar, verbose=False))
    out = llm.create_completion(PROMPT, max_tokens=60, temperature=temperature, seed=seed, grammar=g,
                                repeat_penalty=1.0)
    return out["choices"][0]["text"]


@pytest.mark.parametrize("temperature,seed", [(0.0, 0), (1.0, 3), (1.0, 4)])
def test_same_output_as_the_default_chain(models, temperature, seed):
    default, fast = (generate(llm, SCHEMA, temperature, seed) for llm in models)
    assert fast == default
    assert fast.lstrip().startswith('{') and ('"tool": "python"' in fast or '"tool": "shell"' in fast)


def test_falls_back_to_the_whole_vocabulary_when_no_likely_token_fits(models):
    # no likely token of a JSON answer fits this grammar: each step takes the whole-vocabulary path
    rare = 'root ::= "qz" "xv" "qz"'
    assert (generate(models[1], rare, 1.0, 1, schema=False) == generate(models[0], rare, 1.0, 1, schema=False)
            == "qzxvqz")
