#!/usr/bin/env python3
"""Write ONNX backend-style test directories for Hugging Face transformers.

Issue 49's test data: small GPT-2, LLaMA, Qwen2, BERT, DistilBERT and ViT
models (transformers' own classes, random weights), exported the way users
export them, `torch.onnx.export(model, args, path)` with its defaults (the
torch.export-based exporter and its optimizer), and with optimize=False.
Needs PyTorch >= 2.9 with onnxscript and transformers >= 4.5x (checked with
torch 2.11, transformers 5.x on the GPU host); Debian has neither.

Usage:

    python3 tools/onnx/make_hf_tests.py OUT_DIR [--models gpt2,bert]
        [--modes default,optoff] [--generation] [--finetune] [--threads T]

writes, per model and mode, OUT_DIR/hf_<model>-<mode>/ in the layout of
make_transformer_tests.py (tools/onnx/README.md):

    model.onnx          the export; the nodes' metadata (namespace, class
                        hierarchy, FX node) and the graph's torch.export
                        signature kept, the stack traces dropped (~1 kB a
                        node, nothing an importer reads)
    test_data_set_0/    inference: input_K.pb (graph input order),
                        output_0.pb (float64 reference), tolerances.json
    test_data_set_1/    forward + backward: the same inputs and output,
                        grad_output_0.pb (dy), grad_input_0.pb (float inputs:
                        ViT's pixels), grad_<parameter>.pb for every
                        parameter under its PyTorch name
                        (model.named_parameters(): tied weights once, under
                        the first name), whether or not the file keeps it
                        as an initializer of that name; tolerances.json

References: float64 copy of the float32 model (.double()); tolerances
max(1e-3, 4 d) for outputs and max(1e-2, 4 d) for gradients, d the largest
relative L2 distance of PyTorch's float32 result from the float64 one over
float32 paths (default, one thread, embedding tables or the float input
moved by one ulp in two fixed patterns).  A parameter whose float64
gradient is zero (norm <= 1e-6 of the float32 noise) gets no file.

Modes: default = torch.onnx.export's defaults (optimize=True: the optimizer
folds transposed Linear weights, broadcast class tokens and position rows
into constants); optoff = the same with optimize=False (every parameter an
initializer under its name).

--generation (gpt2, llama, qwen2) also writes OUT_DIR/hf_generation/: a
byte-level BPE tokenizer.json trained here on the repository's Markdown
(vocabulary 320, the LMs' vocabulary), tokenizer_cases.json (strings and
their ids by `tokenizers`), and <model>.json: prompt ids, transformers'
greedy `generate(do_sample=False)` 64 new tokens in float32 and in float64,
the smallest top-1/top-2 logit gap along the float32 run, and the model
(the same weights as hf_<model>-<mode>) exported with the sequence axis
dynamic (torch.export's Dim, up to the position table's length), as models
for generation are: <model>-<mode>.onnx.

--finetune writes OUT_DIR/hf_finetune_bert/: BERT for sequence
classification (the hf_bert configuration, 3 labels) exported for training
(model.onnx with defaults, model_optoff.onnx), 200 batches of 8 x 16 token
ids, attention masks, token types and labels (batches.npz and the same as
TensorProto files under batches/), and PyTorch's loss at every step in
float32 and float64 (curve.json) for SGD lr 0.02 momentum 0.9 (Caffe's SGD
is the same update): the reference for an imported model's fine-tuning.
"""

import argparse
import copy
import glob
import json
import math
import os
import sys
import time
import zlib

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_torchvision_tests import LEAVE_OUT_RATIO, rel_l2, to_np, write_tensor  # noqa: E402

BATCH, SEQ = 2, 13
VOCAB = 320          # the LMs' vocabulary: the tokenizer's (256 bytes + merges)
SMALL_VOCAB = 96     # the encoders'
GEN_NEW_TOKENS = 64


def fail(name, msg):
    raise RuntimeError(f"{name}: {msg}")


# --------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------

def build(name):
    import transformers as tf
    if name == "gpt2":
        cfg = tf.GPT2Config(vocab_size=VOCAB, n_positions=96, n_embd=32, n_layer=2, n_head=2,
                            resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, tie_word_embeddings=True)
        return tf.GPT2LMHeadModel(cfg), "tokens"
    if name == "llama":
        cfg = tf.LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=96,
                             tie_word_embeddings=False, attention_dropout=0.0)
        return tf.LlamaForCausalLM(cfg), "tokens"
    if name == "qwen2":
        cfg = tf.Qwen2Config(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=96,
                             tie_word_embeddings=True, attention_dropout=0.0)
        return tf.Qwen2ForCausalLM(cfg), "tokens"
    if name == "bert":
        cfg = tf.BertConfig(vocab_size=SMALL_VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=64, max_position_embeddings=32, type_vocab_size=2, num_labels=3,
                            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        return tf.BertForSequenceClassification(cfg), "bert"
    if name == "distilbert":
        cfg = tf.DistilBertConfig(vocab_size=SMALL_VOCAB, dim=32, n_layers=2, n_heads=2, hidden_dim=64,
                                  max_position_embeddings=32, dropout=0.0, attention_dropout=0.0,
                                  seq_classif_dropout=0.0, num_labels=3)
        return tf.DistilBertForSequenceClassification(cfg), "mask"
    if name == "vit":
        cfg = tf.ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
                           num_attention_heads=2, intermediate_size=64, num_labels=10,
                           hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        return tf.ViTForImageClassification(cfg), "pixels"
    raise ValueError(name)


MODELS = ["gpt2", "llama", "qwen2", "bert", "distilbert", "vit"]
LMS = ["gpt2", "llama", "qwen2"]


@torch.no_grad()
def randomize(name, model, gen):
    """Weights of order one, nothing constant: Linear/Conv N(0, 1/fan_in),
    biases N(0, 0.1^2), norm weights U(0.5, 1.5), embeddings, tokens and
    position tables N(0, 0.5^2)."""
    done = set()

    def set_(p, t):
        if id(p) not in done:
            p.copy_(t)
            done.add(id(p))

    for mod in model.modules():
        cls = type(mod).__name__
        w = getattr(mod, "weight", None)
        if isinstance(mod, nn.Embedding):
            set_(mod.weight, torch.randn(mod.weight.shape, generator=gen) * 0.5)
        elif isinstance(mod, (nn.Linear, nn.Conv2d)) or cls == "Conv1D":
            fan_in = w.shape[0] if cls == "Conv1D" else w[0].numel()
            set_(w, torch.randn(w.shape, generator=gen) / math.sqrt(fan_in))
        elif isinstance(mod, nn.LayerNorm) or cls.endswith("RMSNorm") or cls.endswith("LayerNorm"):
            if w is not None:
                set_(w, torch.rand(w.shape, generator=gen) + 0.5)
        b = getattr(mod, "bias", None)
        if isinstance(b, nn.Parameter):
            set_(b, torch.randn(b.shape, generator=gen) * 0.1)
    for pname, p in model.named_parameters():
        if id(p) not in done:
            set_(p, torch.randn(p.shape, generator=gen) * 0.5)
    for pname, p in model.named_parameters():
        if p.numel() > 1 and bool((p == p.reshape(-1)[0]).all()):
            fail(name, f"parameter {pname} is constant")


def make_inputs(kind, batch, seq, seed, vocab):
    rng = np.random.RandomState(seed % (2 ** 31))
    if kind == "pixels":
        return {"pixel_values": torch.from_numpy(rng.standard_normal((batch, 3, 32, 32)).astype(np.float32))}
    ids = torch.from_numpy(rng.randint(1, vocab, size=(batch, seq)).astype(np.int64))
    feeds = {"input_ids": ids}
    if kind in ("bert", "mask"):
        mask = np.ones((batch, seq), np.int64)
        for b in range(1, batch):           # later rows padded at the end
            mask[b, seq - 3 * b:] = 0
        feeds["attention_mask"] = torch.from_numpy(mask)
    if kind == "bert":
        tt = np.zeros((batch, seq), np.int64)
        tt[:, seq // 2:] = 1
        feeds["token_type_ids"] = torch.from_numpy(tt)
    return feeds


def is_causal_lm(model):
    name = type(model).__name__
    return name.endswith("ForCausalLM") or name.endswith("LMHeadModel")


def logits_of(model, feeds):
    out = model(**feeds, use_cache=False) if is_causal_lm(model) else model(**feeds)
    return out.logits


def run(model, feeds, dy=None):
    """(logits, {input name: grad}, {parameter: grad}) with gradients on."""
    for p in model.parameters():
        p.grad = None
    feeds = {k: (v.clone().requires_grad_(True) if v.is_floating_point() else v) for k, v in feeds.items()}
    y = logits_of(model, feeds)
    if dy is None:
        return y.detach(), None, None
    (y * dy.to(y.dtype)).sum().backward()
    gin = {k: v.grad.detach() for k, v in feeds.items() if v.is_floating_point()}
    gp = {n: (p.grad.detach().clone() if p.grad is not None else None) for n, p in model.named_parameters()}
    return y.detach(), gin, gp


def nudge(t, seed):
    g = torch.Generator().manual_seed(seed)
    step = torch.randint(-1, 2, t.shape, generator=g).to(t.dtype)
    return torch.nextafter(t, t + step * torch.where(t == 0, torch.ones_like(t), t.abs()))


def float32_paths(model, feeds, fn):
    out = []
    for path in ("default", "threads_1", "ulp_1", "ulp_2"):
        m, f = copy.deepcopy(model), dict(feeds)
        if path.startswith("ulp_"):
            seed = int(path[4:])
            if "pixel_values" in f:
                f["pixel_values"] = nudge(f["pixel_values"], seed)
            else:
                with torch.no_grad():
                    for mod in m.modules():
                        if isinstance(mod, nn.Embedding):
                            mod.weight.copy_(nudge(mod.weight, seed))
        threads = torch.get_num_threads()
        try:
            if path == "threads_1":
                torch.set_num_threads(1)
            out.append(fn(m, f))
        finally:
            torch.set_num_threads(threads)
    return out


# --------------------------------------------------------------------------
# Export
# --------------------------------------------------------------------------

def drop_stack_traces(proto):
    """Drops pkg.torch.onnx.stack_trace entries and doc strings (~1 kB a node);
    keeps every other metadata entry (namespace, class hierarchy, FX node)."""
    dropped = 0
    g = proto.graph
    for item in list(g.node) + list(g.initializer) + list(g.value_info) + list(g.input) + list(g.output):
        fields = item.DESCRIPTOR.fields_by_name
        if "metadata_props" in fields:
            keep = [(e.key, e.value) for e in item.metadata_props if "stack_trace" not in e.key]
            if len(keep) != len(item.metadata_props):
                dropped += 1
                item.ClearField("metadata_props")
                for k, v in keep:
                    e = item.metadata_props.add()
                    e.key, e.value = k, v
        if "doc_string" in fields and item.doc_string:
            item.doc_string = ""
    return dropped


def export(name, model, feeds, path, mode, raw_dir=None, dynamic_sequence=False):
    kwargs = dict(input_names=list(feeds), output_names=["logits"], dynamo=True, external_data=False)
    if dynamic_sequence:
        # The sequence axis symbolic (up to the position table's length), as
        # files exported for generation are: positions, masks and rotary
        # tables are then computed from the input's length, not folded.
        seq = torch.export.Dim("sequence", min=2, max=model.config.max_position_embeddings
                               if hasattr(model.config, "max_position_embeddings") else model.config.n_positions)
        kwargs["dynamic_shapes"] = tuple({1: seq} for _ in feeds)
    if mode == "optoff":
        kwargs["optimize"] = False
    args = tuple(feeds.values())
    if is_causal_lm(model):
        model.config.use_cache = False
    program = torch.onnx.export(model, args, None, **kwargs)
    proto = program.model_proto
    if raw_dir:
        os.makedirs(raw_dir, exist_ok=True)
        onnx.save(proto, os.path.join(raw_dir, f"{name}-{mode}.onnx"))
    drop_stack_traces(proto)
    onnx.save(proto, path)
    onnx.checker.check_model(path)
    g = proto.graph
    if [o.name for o in g.output] != ["logits"]:
        fail(name, f"graph outputs {[o.name for o in g.output]}")
    inputs = [i.name for i in g.input if i.name not in {t.name for t in g.initializer}]
    return proto, inputs


def describe_file(name, model, proto, lines):
    """What the exporter did to the parameters: the metadata a recovery reads."""
    g = proto.graph
    inits = {t.name: t for t in g.initializer}
    params = dict(model.named_parameters())
    state = model.state_dict()
    missing = [p for p in params if p not in inits]
    extra = [n for n in inits if n not in state]
    lines.append(f"== {name}: opsets {[(o.domain, o.version) for o in proto.opset_import]}, "
                 f"{len(g.node)} nodes, {len(inits)} initializers, {len(missing)} parameters not"
                 f" initializers: {missing}")
    for e in proto.metadata_props:
        lines.append(f"  model metadata {e.key}: {e.value[:300]!r}")
    for e in g.metadata_props:
        lines.append(f"  graph metadata {e.key}: {e.value[:4000]!r}")
    consumers = {}
    for nd in g.node:
        for i in nd.input:
            consumers.setdefault(i, []).append(nd)
    for n in extra:
        t = numpy_helper.to_array(inits[n])
        lines.append(f"  extra initializer {n} {t.dtype}{list(t.shape)}")
        for nd in consumers.get(n, [])[:3]:
            md = {e.key: e.value for e in nd.metadata_props}
            lines.append(f"    read by {nd.op_type} {nd.name} inputs {list(nd.input)} metadata "
                         + json.dumps({k: v[:300] for k, v in md.items()}))
    for nd in g.node[:3]:
        lines.append(f"  node {nd.op_type} {nd.name} metadata keys {[e.key for e in nd.metadata_props]}")


# --------------------------------------------------------------------------
# One test directory
# --------------------------------------------------------------------------

def generate(name, mode, out_root, raw_dir, lines):
    t0 = time.time()
    seed = zlib.crc32(name.encode())
    torch.manual_seed(seed)
    model, kind = build(name)
    model = model.eval()
    randomize(name, model, torch.Generator().manual_seed(seed))
    vocab = VOCAB if name in LMS else SMALL_VOCAB
    feeds = make_inputs(kind, BATCH, SEQ, seed, vocab)

    test_dir = os.path.join(out_root, f"hf_{name}-{mode}")
    set0, set1 = os.path.join(test_dir, "test_data_set_0"), os.path.join(test_dir, "test_data_set_1")
    for d in (set0, set1):
        os.makedirs(d, exist_ok=True)
    proto, input_names = export(name, model, feeds, os.path.join(test_dir, "model.onnx"), mode, raw_dir)
    if input_names != list(feeds):
        fail(name, f"graph inputs {input_names}, fed {list(feeds)}")
    describe_file(f"hf_{name}-{mode}", model, proto, lines)

    y32 = float32_paths(model, feeds, lambda m, f: run(m, f)[0])
    dy = torch.from_numpy(np.random.RandomState((seed + 1) % 2 ** 31)
                          .standard_normal(tuple(y32[0].shape)).astype(np.float32))
    m64 = copy.deepcopy(model).double()
    f64 = {k: (v.double() if v.is_floating_point() else v) for k, v in feeds.items()}
    y64, gin64, g64 = run(m64, f64, dy.double())
    std = y64.std().item()
    if not 5e-3 <= std <= 2e2:
        fail(name, f"output std {std:.3g}")
    runs = float32_paths(model, feeds, lambda m, f: run(m, f, dy))

    for k, (n, v) in enumerate(feeds.items()):
        for d in (set0, set1):
            with open(os.path.join(d, f"input_{k}.pb"), "wb") as fh:
                arr = to_np(v)
                fh.write(numpy_helper.from_array(arr if v.is_floating_point() else arr.astype(np.int64),
                                                 name=n).SerializeToString())
    tol0 = {"output_0.pb": max(1e-3, 4 * max(rel_l2(y, y64) for y in y32))}
    write_tensor(os.path.join(set0, "output_0.pb"), to_np(y64), "logits")
    write_tensor(os.path.join(set1, "output_0.pb"), to_np(y64), "logits")
    write_tensor(os.path.join(set1, "grad_output_0.pb"), to_np(dy), "logits")
    tol1 = {"output_0.pb": tol0["output_0.pb"]}
    for k, n in enumerate(feeds):
        if n in gin64:
            write_tensor(os.path.join(set1, f"grad_input_{k}.pb"), to_np(gin64[n]), n)
            tol1[f"grad_input_{k}.pb"] = max(1e-2, 4 * max(rel_l2(r[1][n], gin64[n]) for r in runs))
    left_out = []
    for pname, g in g64.items():
        noise = 0.0 if g is None else max(torch.linalg.vector_norm(r[2][pname].double() - g).item() for r in runs)
        if g is None or torch.linalg.vector_norm(g).item() <= LEAVE_OUT_RATIO * noise:
            left_out.append(pname)
            continue
        fname = f"grad_{pname}.pb"
        write_tensor(os.path.join(set1, fname), to_np(g), pname)
        tol1[fname] = max(1e-2, 4 * max(rel_l2(r[2][pname], g) for r in runs))
    for d, tol in ((set0, tol0), (set1, tol1)):
        with open(os.path.join(d, "tolerances.json"), "w") as fh:
            json.dump(tol, fh, indent=1, sort_keys=True)
    worst = max(tol1.items(), key=lambda kv: kv[1])
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(test_dir) for f in fs)
    lines.append(f"  result: {time.time() - t0:.1f}s inputs {list(feeds)} params "
                 f"{sum(p.numel() for p in model.parameters())} grads {len(tol1) - 1} left out {left_out}"
                 f" tol eval {tol0['output_0.pb']:.3g} worst {worst[1]:.3g} ({worst[0]}) dir {size / 1e3:.0f} kB")
    print("\n".join(lines[-1:]), flush=True)


# --------------------------------------------------------------------------
# Generation references
# --------------------------------------------------------------------------

def train_tokenizer(out_dir, repo_root):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    texts = []
    for pattern in ("README.md", "docs/*.md", "tools/onnx/README.md"):
        for path in sorted(glob.glob(os.path.join(repo_root, pattern))):
            with open(path, encoding="utf-8") as fh:
                texts.append(fh.read())
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>"], show_progress=False)
    tok.train_from_iterator(texts, trainer)
    if tok.get_vocab_size() != VOCAB:
        fail("tokenizer", f"vocabulary {tok.get_vocab_size()}, wanted {VOCAB}")
    path = os.path.join(out_dir, "tokenizer.json")
    tok.save(path)
    cases = ["The plan decides.", "  two  spaces\tand a tab\n", "dlcaffe trains resnet50 at 0.66x",
             "naïve café — ünïcödé ✓ 日本語", "def f(x):\n    return x**2  # square", "",
             " leading space", "trailing space ", "MixedCASE and 12345 67.89", "<|endoftext|>",
             "emoji 🙂 and \u00a0nbsp", "Caffe's prototxt: layer { type: \"Convolution\" }"]
    data = [{"text": s, "ids": tok.encode(s).ids, "decoded": tok.decode(tok.encode(s).ids)} for s in cases]
    with open(os.path.join(out_dir, "tokenizer_cases.json"), "w") as fh:
        json.dump(data, fh, indent=1, ensure_ascii=False)
    return tok


@torch.no_grad()
def generation_reference(name, out_dir, tok, modes, lines):
    seed = zlib.crc32(name.encode())
    torch.manual_seed(seed)
    model, _ = build(name)
    model = model.eval()
    randomize(name, model, torch.Generator().manual_seed(seed))
    prompt_text = "The plan decides"
    prompt = tok.encode(prompt_text).ids
    ids = torch.tensor([prompt], dtype=torch.int64)
    result = {"model": name, "prompt_text": prompt_text, "prompt_ids": prompt, "new_tokens": GEN_NEW_TOKENS}
    for dtype, m in (("float32", model), ("float64", copy.deepcopy(model).double())):
        m.config.use_cache = True
        m.generation_config.eos_token_id = None
        m.generation_config.pad_token_id = 0
        t0 = time.time()
        out = m.generate(ids, max_new_tokens=GEN_NEW_TOKENS, do_sample=False, return_dict_in_generate=True,
                         output_scores=True)
        seq = out.sequences[0, len(prompt):].tolist()
        gaps = [float((s[0].topk(2).values[0] - s[0].topk(2).values[1]).item()) for s in out.scores]
        result[dtype] = {"ids": seq, "text": tok.decode(seq), "min_gap": min(gaps), "seconds": time.time() - t0}
    result["float32_equals_float64"] = result["float32"]["ids"] == result["float64"]["ids"]
    # The same weights as the test directories: export at the prompt's shape.
    for mode in modes:
        path = os.path.join(out_dir, f"{name}-{mode}.onnx")
        try:
            export(name, model, {"input_ids": ids}, path, mode, dynamic_sequence=True)
        except Exception as e:  # say so, keep the references
            lines.append(f"generation {name}-{mode}: the dynamic-sequence export failed: {type(e).__name__}: {e}")
            print(lines[-1], flush=True)
    with open(os.path.join(out_dir, f"{name}.json"), "w") as fh:
        json.dump(result, fh, indent=1)
    lines.append(f"generation {name}: prompt {prompt} float32 == float64: {result['float32_equals_float64']}"
                 f" min gap {result['float32']['min_gap']:.3g} ids {result['float32']['ids'][:16]}...")
    print(lines[-1], flush=True)


# --------------------------------------------------------------------------
# Fine-tuning reference
# --------------------------------------------------------------------------

def finetune_reference(out_dir, lines, steps=200, batch=8, seq=16, lr=0.02, momentum=0.9):
    name = "bert"
    seed = zlib.crc32(b"finetune_bert")
    torch.manual_seed(seed)
    model, _ = build(name)
    model = model.eval()   # dropout is 0; eval keeps the export's graph
    randomize(name, model, torch.Generator().manual_seed(zlib.crc32(name.encode())))
    rng = np.random.RandomState(seed % 2 ** 31)
    ids = rng.randint(1, SMALL_VOCAB, size=(steps, batch, seq)).astype(np.int64)
    lengths = rng.randint(seq // 2, seq + 1, size=(steps, batch))
    mask = (np.arange(seq)[None, None, :] < lengths[:, :, None]).astype(np.int64)
    ids = ids * mask                                   # padding id 0
    tt = np.zeros_like(ids)
    tt[:, :, seq // 2:] = 1
    labels = (ids[:, :, 0] * 3 // SMALL_VOCAB).astype(np.int64)   # the first token's third of the vocabulary
    os.makedirs(os.path.join(out_dir, "batches"), exist_ok=True)
    np.savez_compressed(os.path.join(out_dir, "batches.npz"), input_ids=ids, attention_mask=mask,
                        token_type_ids=tt, labels=labels)
    for n, a in (("input_ids", ids), ("attention_mask", mask), ("token_type_ids", tt), ("labels", labels)):
        with open(os.path.join(out_dir, "batches", f"{n}.pb"), "wb") as fh:
            fh.write(numpy_helper.from_array(a, name=n).SerializeToString())
    feeds0 = {"input_ids": torch.from_numpy(ids[0]), "attention_mask": torch.from_numpy(mask[0]),
              "token_type_ids": torch.from_numpy(tt[0])}
    export(name, model, feeds0, os.path.join(out_dir, "model.onnx"), "default")
    export(name, model, feeds0, os.path.join(out_dir, "model_optoff.onnx"), "optoff")
    curves = {}
    for dtype in ("float32", "float64"):
        m = copy.deepcopy(model)
        if dtype == "float64":
            m = m.double()
        opt = torch.optim.SGD(m.parameters(), lr=lr, momentum=momentum)
        losses = []
        for s in range(steps):
            f = {"input_ids": torch.from_numpy(ids[s]), "attention_mask": torch.from_numpy(mask[s]),
                 "token_type_ids": torch.from_numpy(tt[s])}
            logits = m(**f).logits
            loss = nn.functional.cross_entropy(logits, torch.from_numpy(labels[s]))
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        curves[dtype] = losses
    dist = max(abs(a - b) for a, b in zip(curves["float32"], curves["float64"]))
    with open(os.path.join(out_dir, "curve.json"), "w") as fh:
        json.dump({"steps": steps, "batch": batch, "seq": seq, "lr": lr, "momentum": momentum,
                   "loss": "softmax cross-entropy over the logits, mean over the batch",
                   "float32_max_distance_from_float64": dist, **curves}, fh, indent=1)
    lines.append(f"finetune bert: loss {curves['float32'][0]:.4f} -> {curves['float32'][-1]:.4f}"
                 f" (float64 {curves['float64'][-1]:.4f}), float32 max distance {dist:.3g}")
    print(lines[-1], flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--modes", default="default,optoff")
    ap.add_argument("--generation", action="store_true")
    ap.add_argument("--finetune", action="store_true")
    ap.add_argument("--raw", help="also save the unstripped exports here")
    ap.add_argument("--threads", type=int, default=4)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    import transformers
    lines = [f"torch {torch.__version__}, onnx {onnx.__version__}, transformers {transformers.__version__}"]
    print(lines[0], flush=True)
    modes = [m for m in args.modes.split(",") if m]
    failed = []
    for name in [m for m in args.models.split(",") if m]:
        for mode in modes:
            try:
                generate(name, mode, args.out_dir, args.raw, lines)
            except Exception as e:  # report and go on
                import traceback
                failed.append(f"{name}-{mode}")
                lines.append(f"hf_{name}-{mode}: FAILED: {type(e).__name__}: {e}\n{traceback.format_exc()[-3000:]}")
                print(lines[-1], flush=True)
    if args.generation:
        gdir = os.path.join(args.out_dir, "hf_generation")
        os.makedirs(gdir, exist_ok=True)
        try:
            tok = train_tokenizer(gdir, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
            for name in LMS:
                generation_reference(name, gdir, tok, modes, lines)
        except Exception as e:
            import traceback
            failed.append("generation")
            lines.append(f"generation: FAILED: {e}\n{traceback.format_exc()[-3000:]}")
            print(lines[-1], flush=True)
    if args.finetune:
        try:
            finetune_reference(os.path.join(args.out_dir, "hf_finetune_bert"), lines)
        except Exception as e:
            import traceback
            failed.append("finetune")
            lines.append(f"finetune: FAILED: {e}\n{traceback.format_exc()[-3000:]}")
            print(lines[-1], flush=True)
    with open(os.path.join(args.out_dir, "report.txt"), "w") as fh:
        fh.write("\n".join(lines) + "\n")
    if failed:
        print("FAILED: " + ",".join(failed), file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
