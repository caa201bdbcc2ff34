"""Generation from Python: dlcaffe.TextGenerator on the Hugging Face causal LMs
exported by torch.onnx.export (tests/import/hf_models/hf_generation), against
the tokens transformers' greedy generate chose, and dlcaffe.Tokenizer against
the tokenizers library's ids."""
import json
import os

import numpy as np
import pytest

import dlcaffe
from conftest import SOURCE_DIR

MODELS = os.path.join(SOURCE_DIR, "tests", "import", "hf_models", "hf_generation")


def reference(model):
    with open(os.path.join(MODELS, model + ".json")) as f:
        return json.load(f)


@pytest.mark.parametrize("model", ["gpt2", "llama", "qwen2"])
def test_greedy_generation_with_the_cache_gives_transformers_tokens(model):
    ref = reference(model)
    prompt, expected = ref["prompt_ids"], ref["float32"]["ids"]
    lm = dlcaffe.TextGenerator(os.path.join(MODELS, model + "-default.onnx"),
                               context=len(prompt) + 64)
    assert lm.context == len(prompt) + 64 and lm.vocabulary == 320
    assert lm.generate(prompt, tokens=64, temperature=0) == expected
    # After the prompt the net runs one token at a time.
    assert lm.net.blobs["input_ids"].data.shape == (1, 1)


def test_the_cache_and_rerunning_the_sequence_give_the_same_logits():
    ref = reference("llama")
    ids = ref["prompt_ids"] + ref["float32"]["ids"][:8]
    path = os.path.join(MODELS, "llama-default.onnx")
    cached = dlcaffe.TextGenerator(path, context=len(ids))
    rerun = dlcaffe.TextGenerator(path, context=len(ids), kv_cache=False)
    np.testing.assert_allclose(cached.feed(ref["prompt_ids"]), rerun.feed(ref["prompt_ids"]),
                               atol=2e-5)
    for token in ids[len(ref["prompt_ids"]):]:
        np.testing.assert_allclose(cached.feed([token]), rerun.feed([token]), atol=2e-5)


def test_the_tokenizer_gives_the_tokenizers_librarys_ids():
    tokenizer = dlcaffe.Tokenizer(os.path.join(MODELS, "tokenizer.json"))
    with open(os.path.join(MODELS, "tokenizer_cases.json")) as f:
        cases = json.load(f)
    for case in cases:
        assert tokenizer.encode(case["text"]) == case["ids"], case["text"]
        assert tokenizer.decode(case["ids"]) == case["decoded"], case["text"]


def test_text_from_a_prompt_through_the_tokenizer():
    ref = reference("qwen2")
    tokenizer = dlcaffe.Tokenizer(os.path.join(MODELS, "tokenizer.json"))
    prompt = tokenizer.encode("The plan decides")
    lm = dlcaffe.TextGenerator(os.path.join(MODELS, "qwen2-default.onnx"),
                               context=len(prompt) + 64)
    assert tokenizer.decode(lm.generate(prompt, tokens=64, temperature=0)) == ref["float32"]["text"]


def test_a_fixed_length_export_is_refused_with_the_reason():
    fixed = os.path.join(SOURCE_DIR, "tests", "import", "hf_models", "hf_gpt2-default", "model.onnx")
    with pytest.raises(dlcaffe.Error, match="has a fixed length; export it with the sequence axis"):
        dlcaffe.TextGenerator(fixed, context=8)
