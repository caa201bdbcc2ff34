#!/usr/bin/python3
"""Write ONNX backend-style test directories for transformer models.

The sibling of make_torchvision_tests.py (same layout, gradient extension,
tolerance rule and float64 references; its helpers are imported from there).

Usage:

    # Debian's interpreter (torch 1.13, onnx 1.12): TorchScript exporter only
    /usr/bin/python3 tools/onnx/make_transformer_tests.py OUT_DIR \
        [--exporter torchscript] [--opset 14..17] [--models a,b] [--small|--full]
    # PyTorch >= 2.5 with onnxscript (e.g. 2.11 on the GPU host): either exporter
    python3 tools/onnx/make_transformer_tests.py OUT_DIR --exporter dynamo --opset 18

writes OUT_DIR/<model>-<exporter>-opset<N>/ for each model and prints one
line per model (time, sizes, ops, gradients, tolerances, the ONNX runtime
check).  A model that fails is reported and the others go on; the exit
status is 1 if any failed.

    --small       (default) the small models below: the CI set.
    --full        vit_b_16 and swin_t at 224x224 (hundreds of MB each, minutes
                  on a CPU; not for CI).
    --models a,b  any of the models, small or full, by name.
    --exporter    torchscript (default): torch.onnx.export's TorchScript
                  exporter (dynamo=False where torch has that flag), eval mode,
                  do_constant_folding=False.  dynamo: torch.onnx.export(...,
                  dynamo=True), the torch.export-based exporter (PyTorch >= 2.5
                  with onnxscript; the default exporter from 2.9 on).
    --opset N     default 17 for torchscript, 18 for dynamo.  All models need
                  opset >= 14 (Trilu, Softmax on the last axis); torch 1.13's
                  TorchScript exporter stops at 17.  For the dynamo exporter
                  (checked at 18) the script checks that the file declares the
                  opset asked for.
    --dynamo-optimize keep-weights|off|default
                  what runs after the dynamo exporter (see "Dynamo exporter").
                  Directories of the non-default modes get a suffix
                  (-optoff, -optdefault).
    --threads T   torch CPU threads (default 2).
    --progress    a line after each stage of a model (a full model takes
                  tens of seconds on 16 cores, ~20 min on 2 busy ones).
    --export-only write and verify model.onnx only (no test data, no
                  reference runs): a quick look at what an exporter emits.
    --summary F   the per-model facts (sizes, op counts, initializers,
                  tolerances, checks) as JSON.

Models (random weights, fixed seeds, dropout 0, eval mode; B = batch):

  vit_mini          torchvision VisionTransformer(image_size=28, patch_size=7,
                    num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
                    num_classes=10): input float (2, 3, 28, 28), 17 tokens
                    (16 patches + class token), output (2, 10).  class_token
                    and encoder.pos_embedding are parameters: they get
                    grad_class_token.pb and grad_encoder.pos_embedding.pb.
                    Attention is nn.MultiheadAttention (packed in_proj).
  swin_mini         torchvision SwinTransformer(patch_size=[4, 4],
                    embed_dim=16, depths=[2, 1], num_heads=[2, 4],
                    window_size=[4, 4], stochastic_depth_prob=0,
                    num_classes=10): input float (2, 3, 32, 48) (8x12 patches,
                    2x3 windows, shifted by 2: torch.roll, the shifted-window mask,
                    the relative position bias table gathered through a buffer
                    index), output (2, 10).
  encoder_postnorm  nn.TransformerEncoder of 2 nn.TransformerEncoderLayer
                    (d_model 40, nhead 4, dim_feedforward 64, ReLU,
                    norm_first=False, batch_first=True): input float
                    (2, 13, 40), output (2, 13, 40), no mask.
  encoder_prenorm   the same with norm_first=True, GELU, a final LayerNorm and
                    a causal float mask (0 / -inf, a buffer: initializer
                    causal_mask, no gradient) passed as mask= (is_causal=False
                    where torch has that argument, so that the mask is used as
                    given).
  gpt_lm            GPT-style decoder LM (nanoGPT's structure): input int64
                    token ids (2, 13), vocabulary 80, output logits
                    (2, 13, 80).  tok_emb (nn.Embedding 80x48) + pos_emb
                    (nn.Embedding 16x48, positions = arange(T) in forward),
                    2 pre-LN blocks (LayerNorm, causal self-attention with a
                    packed qkv Linear, explicit q @ k^T / sqrt(16),
                    masked_fill(mask == 0, -inf) from a tril buffer
                    causal_mask (1, 1, 16, 16) sliced to T, softmax, @ v, 3
                    heads; LayerNorm, MLP 48-128-48 with tanh GELU), ln_f, and
                    head.weight TIED to tok_emb.weight (one parameter, two
                    state_dict names; one initializer, one gradient file:
                    the sum of the embedding and the head gradient).  No
                    grad_input file: the input is integer.
  llama_block       LLaMA-style model on float input (2, 13, 48) (already
                    embedded tokens; float so that grad_input is tested
                    through rotary and RMSNorm): 2 blocks of RMSNorm written
                    out (x * rsqrt(mean(x^2) + 1e-5) * w), causal attention
                    with 4 query heads and 2 key/value heads (grouped-query:
                    k, v repeated by expand + reshape), head dim 12, rotary
                    position embedding in rotate-half form with cos/sin from
                    buffers rope_cos / rope_sin (16 x 12, sliced to T: buffers,
                    so initializers without gradient files), causal mask
                    torch.full((T, T), -inf).triu(1) built in forward, SwiGLU
                    MLP (silu(x W1) * (x W3)) W2 with hidden 128, no biases;
                    then RMSNorm and a Linear 48 -> 40: output (2, 13, 40).
  vit_b_16, swin_t  (--full) torchvision's, weights=None, input
                    (2, 3, 224, 224), output (2, 1000).

Layout of OUT_DIR/<model>-<exporter>-opset<N>/ (as make_torchvision_tests.py):

    model.onnx              the exported model, random weights, one file
    test_data_set_0/        inference: input_0.pb, output_0.pb, tolerances.json
    test_data_set_1/        forward + backward: input_0.pb, output_0.pb,
                            grad_output_0.pb (dy, N(0, 1)), grad_input_0.pb
                            (d sum(y * dy) / dx; float inputs only),
                            grad_<initializer>.pb for every parameter,
                            tolerances.json

Inputs: float inputs N(0, 1); token ids uniform in [0, vocab).  Float
tensors are stored as float32, token ids as int64 TensorProtos.  The models
have no BatchNorm and dropout 0, so the training forward equals inference;
both sets are written as for the CNNs (the training set's output is the same
reference).  Gradient files are named after the initializer they belong to
and their TensorProto carries that name.

Weights.  torch.manual_seed(crc32(name)), the module's own initialisation,
then re-drawn so that nothing is constant or zero (torchvision initialises
biases, class_token and the ViT head to zeros) and activations are of order
one: Linear / Conv2d / in_proj weights N(0, 1/fan_in), biases N(0, 0.1^2),
LayerNorm / RMSNorm weights U(0.5, 1.5), LayerNorm biases N(0, 0.1^2),
embeddings N(0, 0.5^2), class_token N(0, 1), position embeddings and swin's
relative_position_bias_table N(0, 0.5^2).  The output's standard deviation
must lie in [5e-3, 2e2] and every Linear/Conv/norm output's in [1e-3, 1e3].

Checks (the script fails loudly, per model, when one does not hold):
  * onnx.checker; only the default ONNX domain; no local functions (they are
    inlined with onnx.inliner where possible); the file declares the opset
    asked for; graph input/output names and element types; onnx's shape
    inference gives the output PyTorch's shape (a symbolic dimension, as
    swin's TorchScript export has in the batch, and intermediates left
    without a shape are printed as warnings, not errors).
  * initializers: every parameter is an initializer under one of its
    state_dict names (several for tied weights), bit-identical to PyTorch's
    tensor; a parameter that is not (folded, transposed, renamed by the
    exporter) fails with the list of initializers that are not state_dict
    names; every initializer named after a state_dict entry equals it; no
    other initializer and no Constant node may hold a parameter's values in
    any order (a folded transposed copy would take part of the gradient).
  * gradients: every parameter gets a file; a parameter whose float64
    gradient is zero as in make_torchvision_tests.py (||g64|| <= 1e-6 *
    ||g32 - g64||) fails the model: none of these models has one.
  * the ONNX reference check: onnxruntime (CPU), else onnx.reference's
    ReferenceEvaluator (onnx >= 1.13, models under 5M parameters), runs
    model.onnx on the input; its output must be within test_data_set_0's
    bound of the float64 reference.  Neither installed (Debian's onnx 1.12):
    skipped, and the line says so.
  * the gradient files against the ONNX graph itself (onnxruntime only,
    models under 5M parameters): for each gradient file and grad_input_0.pb,
    onnxruntime's central difference of sum(y * dy) along a direction near
    the gradient (step 3e-3 of the tensor's norm) must equal <g, h> within 5%
    relative (seen: <= 1.5e-2 for the ReLU encoder, ~1e-3 or less for the
    others).  This catches a parameter whose use in the file differs from
    PyTorch's (a copy, a tied weight stored twice, a wrong initializer).

References: float64 copy of the model (the same float32 weights; .double()),
results stored as float32.  Every forward runs with gradients enabled and
nn.MultiheadAttention's fast path switched off where torch allows it
(torch.backends.mha), so PyTorch takes the same (slow, exportable) path in
export, float32 and float64.

Tolerances (as make_torchvision_tests.py): relative L2 per file,
outputs max(1e-3, 4 d), gradients max(1e-2, 4 d), d the largest distance of
PyTorch's float32 result from the float64 reference over these float32
paths: default, oneDNN off, one thread, the float input moved by at most one
float32 ulp (two fixed patterns; for token inputs the embedding tables are
moved instead), and channels-last for image inputs.

Dynamo exporter.  It names initializers after the ExportedProgram's
parameters and buffers: the state_dict names (for tied weights the first
name), lifted tensor constants after their constant names.  By default
torch.onnx.export(..., dynamo=True) runs onnxscript's optimizer, which
constant-folds Transpose(weight) of every Linear into a new initializer (the
parameter disappears from the file, its transposed copy gets a value name)
and splits of activations arrive as SplitToSequence/SequenceAt until that
optimizer rewrites them into Split.  So the modes of --dynamo-optimize:
    keep-weights (default)  export with optimize=False, then run onnxscript's
                 optimize_ir with should_fold refusing every node that reads
                 a parameter: sequences become Split, shape computations
                 fold, weights stay the initializers they are.
    off          optimize=False alone.
    default      torch's own optimize=True; expect the initializer check to
                 fail on folded weights.
The model is written as one file (the ModelProto is saved by the script;
a file beside model.onnx fails the model), without the metadata_props and
doc strings of nodes and tensors (stack traces and module paths, ~2 kB a
node: 2.7x the file of vit_mini).  Checked with torch 2.11, onnx 1.23,
onnxscript 0.7.2, onnxruntime 1.30: all models pass every check; the
reference files equal those written under torch 1.13 to float32 rounding,
only the tied gradient's name differs (grad_head.weight.pb there).
"""

import argparse
import collections
import copy
import inspect
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
import torch.nn.functional as F
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_torchvision_tests as tv  # noqa: E402
from make_torchvision_tests import (  # noqa: E402
    LAYER_STD_RANGE, LEAVE_OUT_RATIO, NORM_TYPES, STD_RANGE,
    act_std, fail, is_constant, rel_l2, to_np, write_tensor)

BATCH = 2
SEQ = 13           # sequence length of the sequence models (not a power of two)
MAX_POS = 16       # position tables / masks: longer than SEQ, sliced in forward


# --------------------------------------------------------------------------
# Models written out here
# --------------------------------------------------------------------------

class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class GPTAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)

    def forward(self, x, mask):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        hs = C // self.heads
        q = q.view(B, T, self.heads, hs).transpose(1, 2)
        k = k.view(B, T, self.heads, hs).transpose(1, 2)
        v = v.view(B, T, self.heads, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))
        att = att.masked_fill(mask[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class GPTBlock(nn.Module):
    def __init__(self, dim, heads, hidden):
        super().__init__()
        self.ln_1 = nn.LayerNorm(dim)
        self.attn = GPTAttention(dim, heads)
        self.ln_2 = nn.LayerNorm(dim)
        self.c_fc = nn.Linear(dim, hidden)
        self.gelu = nn.GELU(approximate="tanh")
        self.mlp_proj = nn.Linear(hidden, dim)

    def forward(self, x, mask):
        x = x + self.attn(self.ln_1(x), mask)
        return x + self.mlp_proj(self.gelu(self.c_fc(self.ln_2(x))))


class GPTLM(nn.Module):
    def __init__(self, vocab=80, dim=48, heads=3, layers=2, hidden=128, max_pos=MAX_POS):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, dim)
        self.pos_emb = nn.Embedding(max_pos, dim)
        self.blocks = nn.ModuleList([GPTBlock(dim, heads, hidden) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.tok_emb.weight  # tied
        self.register_buffer("causal_mask", torch.tril(torch.ones(max_pos, max_pos)).view(1, 1, max_pos, max_pos))

    def forward(self, idx):
        B, T = idx.size()
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        x = self.tok_emb(idx) + self.pos_emb(pos)
        for block in self.blocks:
            x = block(x, self.causal_mask)
        return self.head(self.ln_f(x))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, dim, heads, kv_heads):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.wq = nn.Linear(dim, heads * self.head_dim, bias=False)
        self.wk = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(dim, kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(heads * self.head_dim, dim, bias=False)

    def forward(self, x, cos, sin, mask):
        B, T, _ = x.shape
        hd = self.head_dim
        q = self.wq(x).view(B, T, self.heads, hd).transpose(1, 2)      # B, H, T, hd
        k = self.wk(x).view(B, T, self.kv_heads, hd).transpose(1, 2)   # B, KV, T, hd
        v = self.wv(x).view(B, T, self.kv_heads, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.heads // self.kv_heads
        k = k[:, :, None].expand(B, self.kv_heads, rep, T, hd).reshape(B, self.heads, T, hd)
        v = v[:, :, None].expand(B, self.kv_heads, rep, T, hd).reshape(B, self.heads, T, hd)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(hd) + mask
        out = torch.matmul(F.softmax(scores, dim=-1), v)
        return self.wo(out.transpose(1, 2).reshape(B, T, self.heads * hd))


class LlamaBlock(nn.Module):
    def __init__(self, dim, heads, kv_heads, hidden):
        super().__init__()
        self.attention_norm = RMSNorm(dim)
        self.attention = LlamaAttention(dim, heads, kv_heads)
        self.ffn_norm = RMSNorm(dim)
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)

    def forward(self, x, cos, sin, mask):
        x = x + self.attention(self.attention_norm(x), cos, sin, mask)
        h = self.ffn_norm(x)
        return x + self.w2(F.silu(self.w1(h)) * self.w3(h))


class LlamaModel(nn.Module):
    def __init__(self, dim=48, heads=4, kv_heads=2, layers=2, hidden=128, out=40, max_pos=MAX_POS):
        super().__init__()
        self.layers = nn.ModuleList([LlamaBlock(dim, heads, kv_heads, hidden) for _ in range(layers)])
        self.norm = RMSNorm(dim)
        self.output = nn.Linear(dim, out, bias=False)
        hd = dim // heads
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
        freqs = torch.outer(torch.arange(max_pos, dtype=torch.float64), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("rope_cos", emb.cos().float())
        self.register_buffer("rope_sin", emb.sin().float())

    def forward(self, x):
        T = x.shape[1]
        cos, sin = self.rope_cos[:T], self.rope_sin[:T]
        mask = torch.full((T, T), float("-inf"), dtype=x.dtype, device=x.device).triu(1)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.output(self.norm(x))


class Encoder(nn.Module):
    """nn.TransformerEncoder, batch_first, optionally with a causal mask."""

    def __init__(self, norm_first, dim=40, heads=4, ff=64, layers=2, seq=SEQ):
        super().__init__()
        layer = nn.TransformerEncoderLayer(
            dim, heads, dim_feedforward=ff, dropout=0.0, batch_first=True, norm_first=norm_first,
            activation="gelu" if norm_first else "relu")
        self.encoder = nn.TransformerEncoder(
            layer, layers, norm=nn.LayerNorm(dim) if norm_first else None, enable_nested_tensor=False)
        self.causal = norm_first
        if self.causal:
            mask = torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1)
            self.register_buffer("causal_mask", mask)
        self.is_causal_arg = "is_causal" in inspect.signature(nn.TransformerEncoder.forward).parameters

    def forward(self, x):
        if not self.causal:
            return self.encoder(x)
        if self.is_causal_arg:
            return self.encoder(x, mask=self.causal_mask, is_causal=False)
        return self.encoder(x, mask=self.causal_mask)


def build_vit_mini():
    from torchvision.models.vision_transformer import VisionTransformer
    return VisionTransformer(image_size=28, patch_size=7, num_layers=2, num_heads=2,
                             hidden_dim=32, mlp_dim=64, num_classes=10)


def build_swin_mini():
    from torchvision.models.swin_transformer import SwinTransformer
    return SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 1], num_heads=[2, 4],
                           window_size=[4, 4], stochastic_depth_prob=0.0, num_classes=10)


def build_torchvision(name):
    import torchvision
    return lambda: getattr(torchvision.models, name)(weights=None)


# name: builder, input (kind, shape[, vocab]), input name, output name, full-size?
MODELS = collections.OrderedDict([
    ("vit_mini", ((build_vit_mini, ("float", (BATCH, 3, 28, 28))), "input", "output", False)),
    ("swin_mini", ((build_swin_mini, ("float", (BATCH, 3, 32, 48))), "input", "output", False)),
    ("encoder_postnorm", ((lambda: Encoder(False), ("float", (BATCH, SEQ, 40))), "input", "output", False)),
    ("encoder_prenorm", ((lambda: Encoder(True), ("float", (BATCH, SEQ, 40))), "input", "output", False)),
    ("gpt_lm", ((GPTLM, ("tokens", (BATCH, SEQ), 80)), "input_ids", "logits", False)),
    ("llama_block", ((LlamaModel, ("float", (BATCH, SEQ, 48))), "input", "output", False)),
    ("vit_b_16", ((build_torchvision("vit_b_16"), ("float", (BATCH, 3, 224, 224))), "input", "output", True)),
    ("swin_t", ((build_torchvision("swin_t"), ("float", (BATCH, 3, 224, 224))), "input", "output", True)),
])
# MODELS[name] = ((builder, input spec), input name, output name, full)
SMALL = [n for n, v in MODELS.items() if not v[3]]
FULL = [n for n, v in MODELS.items() if v[3]]

DEFAULT_OPSET = {"torchscript": 17, "dynamo": 18}
MIN_OPSET = 14
LAYER_TYPES = (nn.Conv2d, nn.Linear, RMSNorm) + NORM_TYPES


# --------------------------------------------------------------------------
# Weights
# --------------------------------------------------------------------------

@torch.no_grad()
def randomize(name, model, gen):
    """Re-draw every parameter (see "Weights" in the docstring)."""
    done = set()

    def normal(p, std):
        if id(p) not in done:
            p.copy_(torch.randn(p.shape, generator=gen) * std)
            done.add(id(p))

    def uniform(p, lo, hi):
        if id(p) not in done:
            p.copy_(torch.rand(p.shape, generator=gen) * (hi - lo) + lo)
            done.add(id(p))

    for mod in model.modules():
        if isinstance(mod, nn.Embedding):
            normal(mod.weight, 0.5)
        elif isinstance(mod, (nn.Linear, nn.Conv2d)):
            normal(mod.weight, 1.0 / math.sqrt(mod.weight[0].numel()))
            if mod.bias is not None:
                normal(mod.bias, 0.1)
        elif isinstance(mod, NORM_TYPES) and getattr(mod, "weight", None) is not None:
            uniform(mod.weight, 0.5, 1.5)
            if mod.bias is not None:
                normal(mod.bias, 0.1)
        elif isinstance(mod, RMSNorm):
            uniform(mod.weight, 0.5, 1.5)
        elif isinstance(mod, nn.MultiheadAttention):
            if mod.in_proj_weight is None:
                fail(name, "MultiheadAttention without a packed in_proj_weight")
            normal(mod.in_proj_weight, 1.0 / math.sqrt(mod.embed_dim))
            if mod.in_proj_bias is not None:
                normal(mod.in_proj_bias, 0.1)
    for pname, p in model.named_parameters():
        if id(p) in done:
            continue
        leaf = pname.rsplit(".", 1)[-1]
        if leaf == "class_token":
            normal(p, 1.0)
        elif leaf in ("pos_embedding", "relative_position_bias_table"):
            normal(p, 0.5)
        else:
            fail(name, f"no randomisation rule for parameter {pname}")
    for pname, p in model.named_parameters():
        if is_constant(p) or not bool(torch.isfinite(p).all()):
            fail(name, f"parameter {pname} is constant or not finite after randomisation")


# --------------------------------------------------------------------------
# Export and verification
# --------------------------------------------------------------------------

def export_kwargs_supported():
    return inspect.signature(torch.onnx.export).parameters


def param_aliases(model):
    """{deduplicated parameter name: [every state_dict name of that tensor]}"""
    by_id = collections.defaultdict(list)
    for n, t in model.state_dict(keep_vars=True).items():
        by_id[id(t)].append(n)
    return {n: by_id[id(p)] for n, p in model.named_parameters()}


def inline_functions(name, proto):
    if not proto.functions:
        return proto, 0
    count = len(proto.functions)
    try:
        from onnx import inliner
    except ImportError:
        fail(name, f"the model has {count} local functions and this onnx ({onnx.__version__}) has no inliner")
    proto = inliner.inline_local_functions(proto)
    if proto.functions:
        fail(name, f"{len(proto.functions)} local functions left after inlining")
    return proto, count


def export_torchscript(model, x, path, opset, in_name, out_name):
    kwargs = dict(input_names=[in_name], output_names=[out_name], opset_version=opset,
                  training=torch.onnx.TrainingMode.EVAL, do_constant_folding=False,
                  export_params=True, keep_initializers_as_inputs=False)
    sig = export_kwargs_supported()
    if "dynamo" in sig:
        kwargs["dynamo"] = False
    torch.onnx.export(model, (x,), path, **{k: v for k, v in kwargs.items() if k in sig})


def strip_metadata(proto):
    """Clear metadata_props (onnx >= 1.16) and doc_string of nodes, tensors and
    value infos: the dynamo exporter stores stack traces and module paths
    there, which more than double a small model's file."""
    count = 0
    g = proto.graph
    for item in list(g.node) + list(g.initializer) + list(g.value_info) + list(g.input) + list(g.output):
        fields = item.DESCRIPTOR.fields_by_name
        touched = False
        if "metadata_props" in fields and len(item.metadata_props):
            item.ClearField("metadata_props")
            touched = True
        if "doc_string" in fields and item.doc_string:
            item.doc_string = ""
            touched = True
        count += touched
    return count


def export_dynamo(name, model, x, path, opset, in_name, out_name, mode, param_names):
    sig = export_kwargs_supported()
    if "dynamo" not in sig:
        fail(name, f"torch {torch.__version__} has no torch.onnx.export(..., dynamo=True)")
    kwargs = dict(input_names=[in_name], output_names=[out_name], opset_version=opset,
                  export_params=True, keep_initializers_as_inputs=False, dynamo=True)
    for k, v in (("external_data", False), ("verbose", False)):
        if k in sig:
            kwargs[k] = v
    if "optimize" in sig:
        kwargs["optimize"] = mode == "default"
    elif mode != "default":
        fail(name, f"torch {torch.__version__}'s exporter has no optimize= flag; use --dynamo-optimize default")
    program = torch.onnx.export(model, (x,), None, **kwargs)
    notes = []
    if mode == "keep-weights":
        try:
            from onnxscript.optimizer import optimize_ir
        except ImportError as e:
            fail(name, f"--dynamo-optimize keep-weights needs onnxscript's optimize_ir ({e})")
        if "should_fold" not in inspect.signature(optimize_ir).parameters:
            fail(name, "this onnxscript's optimize_ir has no should_fold; use --dynamo-optimize off")

        def should_fold(node):
            for v in node.inputs:
                if v is not None and v.name in param_names:
                    return False
            return None

        optimize_ir(program.model, should_fold=should_fold)
        notes.append("onnxscript optimize_ir (no folding of nodes that read a parameter)")
    proto = program.model_proto
    stripped = strip_metadata(proto)
    if stripped:
        notes.append(f"dropped metadata_props/doc_string of {stripped} nodes/tensors (stack traces; ~2 kB a node)")
    onnx.save(proto, path)
    for extra in os.listdir(os.path.dirname(path)):
        full = os.path.join(os.path.dirname(path), extra)
        if extra != os.path.basename(path) and os.path.isfile(full):
            fail(name, f"the exporter left {extra} beside model.onnx")
    return notes


def verify(name, model, path, exporter, opset, in_name, out_name, in_kind, out_shape):
    """The checks of the docstring; returns facts for the summary."""
    proto = onnx.load(path)
    proto, inlined = inline_functions(name, proto)
    if inlined or any(t.data_location == onnx.TensorProto.EXTERNAL for t in proto.graph.initializer):
        onnx.save(proto, path)  # one self-contained file
    onnx.checker.check_model(path)
    graph = proto.graph
    domains = {o.domain: o.version for o in proto.opset_import}
    if domains.get("", domains.get("ai.onnx")) != opset:
        fail(name, f"the file declares opsets {domains}, asked for {opset}")
    odd = sorted({nd.domain for nd in graph.node if nd.domain not in ("", "ai.onnx")})
    if odd:
        fail(name, f"nodes of non-ONNX domains {odd}")

    inits = {t.name: t for t in graph.initializer}
    state = {k: v for k, v in model.state_dict().items()}
    aliases = param_aliases(model)
    init_of_param = {}
    for pname, names in aliases.items():
        present = [n for n in names if n in inits]
        if len(present) > 1:
            fail(name, f"parameter {pname} is stored twice, as {present}")
        if present:
            init_of_param[pname] = present[0]
    for n, t in inits.items():
        if n in state:
            ref, val = to_np(state[n]), numpy_helper.to_array(t)
            if val.shape != ref.shape or val.dtype != ref.dtype or not np.array_equal(val, ref):
                fail(name, f"initializer {n} differs from the PyTorch tensor "
                           f"({val.dtype}{list(val.shape)} vs {ref.dtype}{list(ref.shape)})")
    extra = [n for n in inits if n not in state]
    # An extra initializer that holds a parameter's values (in any order, e.g.
    # transposed) is a folded copy that would take part of the gradient.
    sorted_params = {}
    for pname, p in model.named_parameters():
        sorted_params.setdefault(p.numel(), []).append((pname, np.sort(to_np(p).reshape(-1))))
    stored = [(f"initializer {n}", numpy_helper.to_array(inits[n])) for n in extra]
    stored += [(f"Constant node {nd.name or nd.output[0]}", numpy_helper.to_array(a.t))
               for nd in graph.node if nd.op_type == "Constant" for a in nd.attribute if a.name == "value"]
    for what, val in stored:
        for pname, s in sorted_params.get(val.size, []):
            if val.dtype == s.dtype and np.array_equal(np.sort(val.reshape(-1)), s):
                fail(name, f"{what} {list(val.shape)} holds the values of parameter {pname}"
                           f" {list(model.get_parameter(pname).shape)}: the exporter folded a copy of it"
                           f" (e.g. a transposed weight); its gradient cannot be checked")
    missing = [p for p in aliases if p not in init_of_param]
    buffers = [n for n, _ in model.named_buffers()]
    buffers_in_file = [n for n in buffers if n in inits]

    graph_inputs = [i for i in graph.input if i.name not in inits]
    graph_outputs = list(graph.output)
    if [i.name for i in graph_inputs] != [in_name] or [o.name for o in graph_outputs] != [out_name]:
        fail(name, f"graph inputs {[i.name for i in graph_inputs]}, outputs {[o.name for o in graph_outputs]}")
    want_type = onnx.TensorProto.INT64 if in_kind == "tokens" else onnx.TensorProto.FLOAT
    if graph_inputs[0].type.tensor_type.elem_type != want_type:
        fail(name, f"graph input has element type {graph_inputs[0].type.tensor_type.elem_type}")

    inferred = onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True)
    out = [o for o in inferred.graph.output if o.name == out_name][0]
    dims = [d.dim_value if d.HasField("dim_value") else d.dim_param
            for d in out.type.tensor_type.shape.dim]
    if len(dims) != len(out_shape) or any(isinstance(d, int) and d != w for d, w in zip(dims, out_shape)):
        fail(name, f"shape inference gives output {dims}, PyTorch {list(out_shape)}")
    symbolic_output = [d for d in dims if not isinstance(d, int)]
    known = {v.name for v in inferred.graph.value_info} | {o.name for o in graph_outputs}
    unshaped = [o for nd in inferred.graph.node for o in nd.output if o and o not in known]

    ops = collections.Counter(nd.op_type for nd in graph.node)
    return {
        "init_of_param": init_of_param, "missing_params": missing,
        "extra_initializers": {n: [int(d) for d in inits[n].dims] for n in extra},
        "buffers_in_file": buffers_in_file, "buffers_not_in_file": [b for b in buffers if b not in inits],
        "ops": dict(sorted(ops.items())), "nodes": len(graph.node), "unshaped": len(unshaped),
        "unshaped_examples": unshaped[:3], "inlined_functions": inlined, "output_dims": dims,
        "symbolic_output": bool(symbolic_output),
        "opset_imports": domains, "ir_version": proto.ir_version,
    }


def onnxruntime_session(proto):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    return ort.InferenceSession(proto.SerializeToString(), opts, providers=["CPUExecutionProvider"])


def onnx_runtime_check(name, path, feeds, y_ref, bound, n_params):
    try:
        import onnxruntime as ort
    except ImportError:
        ort = None
    if ort is not None:
        y = onnxruntime_session(onnx.load(path)).run(None, feeds)[0]
        engine = f"onnxruntime {ort.__version__}"
    else:
        try:
            from onnx.reference import ReferenceEvaluator
        except ImportError:
            return "skipped (no onnxruntime, no onnx.reference)", None
        if n_params > 5_000_000:
            return "skipped (no onnxruntime; too large for onnx.reference)", None
        y = ReferenceEvaluator(path).run(None, feeds)[0]
        engine = f"onnx.reference {onnx.__version__}"
    err = rel_l2(torch.from_numpy(np.asarray(y, dtype=np.float64)), y_ref)
    if not err <= bound:
        fail(name, f"{engine} gives an output {err:.3g} from the float64 reference (bound {bound:.3g})")
    return engine, err


FD_STEP = 3e-3      # central differences: step 3e-3 * ||tensor||
FD_BOUND = 5e-2     # |fd - <g, h>| / |<g, h>|


def onnx_gradient_check(name, path, in_name, x, dy, dx64, grads, seed):
    """Central differences of sum(y * dy) through onnxruntime, per gradient
    file: the derivative of the ONNX graph, as onnxruntime runs it, with
    respect to that initializer (and the float input) along a direction
    h = step * ||w|| * unit(g / ||g|| + r / (2 ||r||)), r random, must equal
    <g, h> for the file's g.  Parameters become graph inputs of a copy of the
    model so that one session takes perturbed values.  Returns the largest
    relative error, or None without onnxruntime."""
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return None
    proto = onnx.load(path)
    inits = {t.name: t for t in proto.graph.initializer}
    base = {n: numpy_helper.to_array(inits[n]) for n in grads}
    for n in grads:
        proto.graph.input.append(onnx.helper.make_tensor_value_info(
            n, inits[n].data_type, list(inits[n].dims)))
    sess = onnxruntime_session(proto)
    dy64 = to_np(dy).astype(np.float64)
    x_np = to_np(x)
    rng = np.random.RandomState(seed % (2 ** 31))

    def objective(feeds):
        y = sess.run(None, {in_name: x_np, **feeds})[0]
        return float(np.sum(y.astype(np.float64) * dy64))

    def check(what, w, g, feed):
        r = rng.standard_normal(w.shape)
        d = g / np.linalg.norm(g) + 0.5 * r / np.linalg.norm(r)
        h = FD_STEP * np.linalg.norm(w) * d / np.linalg.norm(d)
        wp, wm = (w + h).astype(np.float32), (w - h).astype(np.float32)
        fd = (objective(feed(wp)) - objective(feed(wm))) / 2
        expect = float(np.sum(g * (wp.astype(np.float64) - wm.astype(np.float64)) / 2))
        err = abs(fd - expect) / abs(expect)
        if not err <= FD_BOUND:
            fail(name, f"onnxruntime's central difference of sum(y * dy) for {what} is {fd:.6g},"
                       f" the gradient file gives {expect:.6g} (relative error {err:.3g} > {FD_BOUND})")
        return err

    worst = 0.0
    for n, g in grads.items():
        worst = max(worst, check(n, base[n].astype(np.float64), g, lambda v, n=n: {n: v}))
    if dx64 is not None:
        def feed_x(v):
            nonlocal x_np
            x_np = v
            return {}
        x0 = x_np
        worst = max(worst, check(in_name, x0.astype(np.float64), dx64, feed_x))
        x_np = x0
    return worst


# --------------------------------------------------------------------------
# Reference runs
# --------------------------------------------------------------------------

def run_model(model, x, dy=None):
    """Forward (gradients enabled: PyTorch's exportable paths) and, with dy,
    backward; returns y, dx or None, {parameter name: grad or None}."""
    model.eval()
    for p in model.parameters():
        p.grad = None
    xg = x.clone().requires_grad_(True) if x.is_floating_point() else x
    y = model(xg)
    if dy is None:
        return y.detach(), None, None
    (y * dy.to(y.dtype)).sum().backward()
    grads = {n: (p.grad.detach().clone() if p.grad is not None else None)
             for n, p in model.named_parameters()}
    return y.detach(), (xg.grad.detach() if x.is_floating_point() else None), grads


def nudge(t, seed):
    """t with each value moved by at most one float32 ulp (fixed pattern)."""
    g = torch.Generator().manual_seed(seed)
    step = torch.randint(-1, 2, t.shape, generator=g).to(t.dtype)
    return torch.nextafter(t, t + step * torch.where(t == 0, torch.ones_like(t), t.abs()))


def float32_paths(model, x, run):
    """run(model copy, x) along PyTorch's float32 paths (see the docstring)."""
    paths = ["default", "no_mkldnn", "threads_1", "ulp_1", "ulp_2"]
    if x.is_floating_point() and x.dim() == 4:
        paths.append("channels_last")
    results = []
    for path in paths:
        m, xx = copy.deepcopy(model), x
        if path.startswith("ulp_"):
            seed = int(path[4:])
            if x.is_floating_point():
                xx = nudge(x, seed)
            else:
                with torch.no_grad():
                    for mod in m.modules():
                        if isinstance(mod, nn.Embedding):
                            mod.weight.copy_(nudge(mod.weight, seed))
        if path == "channels_last":
            m = m.to(memory_format=torch.channels_last)
            xx = x.contiguous(memory_format=torch.channels_last)
        threads = torch.get_num_threads()
        try:
            if path == "threads_1":
                torch.set_num_threads(1)
            if path == "no_mkldnn":
                with torch.backends.mkldnn.flags(enabled=False):
                    results.append(run(m, xx))
            else:
                results.append(run(m, xx))
        finally:
            torch.set_num_threads(threads)
        del m
    return results


class LayerStds(tv.LayerStds):
    """Standard deviation of every Linear/Conv/norm (RMSNorm too) output."""

    def __init__(self, model):
        self.stds = []
        self.hooks = [m.register_forward_hook(self.hook) for m in model.modules() if isinstance(m, LAYER_TYPES)]


def write_input(path, x, name):
    if x.is_floating_point():
        write_tensor(path, to_np(x), name)
    else:
        with open(path, "wb") as f:
            f.write(numpy_helper.from_array(to_np(x).astype(np.int64), name=name).SerializeToString())


def dir_size(d):
    return sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)


def generate(name, out_root, exporter, opset, dyn_mode, progress=False, export_only=False):
    t0 = time.time()

    def step(what):
        if progress:
            print(f"  {name}: {what} ({time.time() - t0:.1f}s)", flush=True)
    (builder, in_spec), in_name, out_name, _ = MODELS[name]
    seed = zlib.crc32(name.encode())
    rng = np.random.RandomState(seed % (2 ** 31))
    kind, shape = in_spec[0], tuple(in_spec[1])
    if kind == "float":
        x = torch.from_numpy(rng.standard_normal(shape).astype(np.float32))
    else:
        x = torch.from_numpy(rng.randint(0, in_spec[2], size=shape).astype(np.int64))

    torch.manual_seed(seed)
    model = builder().eval()
    randomize(name, model, torch.Generator().manual_seed(seed))
    for p in model.parameters():
        p.requires_grad_(True)
    aliases = param_aliases(model)
    n_params = sum(p.numel() for p in model.parameters())

    if export_only:
        y32_evals = [run_model(model, x)[0]]
    else:
        y32_evals = float32_paths(model, x, lambda m, xx: run_model(m, xx)[0])
    out_shape = tuple(y32_evals[0].shape)
    rng_dy = np.random.RandomState((seed + 1) % (2 ** 31))
    dy = torch.from_numpy(rng_dy.standard_normal(out_shape).astype(np.float32))

    suffix = {"keep-weights": "", "off": "-optoff", "default": "-optdefault"}[dyn_mode] if exporter == "dynamo" else ""
    test_dir = os.path.join(out_root, f"{name}-{exporter}-opset{opset}{suffix}")
    set0 = os.path.join(test_dir, "test_data_set_0")
    set1 = os.path.join(test_dir, "test_data_set_1")
    os.makedirs(test_dir, exist_ok=True)
    model_path = os.path.join(test_dir, "model.onnx")
    if os.path.exists(model_path):
        os.remove(model_path)

    step("float32 eval paths done")
    # ---- export -----------------------------------------------------------
    notes = []
    param_names = {a for names in aliases.values() for a in names}
    if exporter == "torchscript":
        export_torchscript(model, x, model_path, opset, in_name, out_name)
    else:
        notes = export_dynamo(name, model, x, model_path, opset, in_name, out_name, dyn_mode, param_names)
    if model.training:
        fail(name, "model left eval mode during export")
    facts = verify(name, model, model_path, exporter, opset, in_name, out_name, kind, out_shape)

    step("exported and verified")
    if export_only:
        return {"model": name, "dir": os.path.basename(test_dir), "exporter": exporter, "opset": opset,
                "torch": torch.__version__, "onnx": onnx.__version__, "input": list(shape), "input_kind": kind,
                "output": list(out_shape), "params": n_params, "model_bytes": os.path.getsize(model_path),
                "tied": {p: a for p, a in aliases.items() if len(a) > 1}, "notes": notes,
                "seconds": time.time() - t0, "export_only": True, **facts}
    os.makedirs(set0, exist_ok=True)
    os.makedirs(set1, exist_ok=True)
    # ---- float64 references -------------------------------------------------
    m64 = copy.deepcopy(model).double()
    x64 = x.double() if kind == "float" else x
    probe = LayerStds(m64)
    y64_eval = run_model(m64, x64)[0]
    eval_range = probe.done()
    probe = LayerStds(m64)
    y64, dx64, g64 = run_model(m64, x64, dy.double())
    train_range = probe.done()
    del m64
    for what, s in (("eval", act_std(y64_eval)), ("training", act_std(y64))):
        if not (STD_RANGE[0] <= s <= STD_RANGE[1]):
            fail(name, f"{what} output std {s:.3g} outside {STD_RANGE}")
    for what, (lo, hi) in (("eval", eval_range), ("training", train_range)):
        if lo < LAYER_STD_RANGE[0] or hi > LAYER_STD_RANGE[1]:
            fail(name, f"{what} layer output stds span [{lo:.3g}, {hi:.3g}], outside {LAYER_STD_RANGE}")

    step("float64 references done")
    # ---- test_data_set_0 ---------------------------------------------------
    write_input(os.path.join(set0, "input_0.pb"), x, in_name)
    write_tensor(os.path.join(set0, "output_0.pb"), to_np(y64_eval), out_name)
    tol0 = {"output_0.pb": max(1e-3, 4 * max(rel_l2(y, y64_eval) for y in y32_evals))}
    with open(os.path.join(set0, "tolerances.json"), "w") as f:
        json.dump(tol0, f, indent=1, sort_keys=True)
    del y32_evals

    # ---- test_data_set_1 ---------------------------------------------------
    runs32 = float32_paths(model, x, lambda m, xx: run_model(m, xx, dy))
    write_input(os.path.join(set1, "input_0.pb"), x, in_name)
    write_tensor(os.path.join(set1, "output_0.pb"), to_np(y64), out_name)
    write_tensor(os.path.join(set1, "grad_output_0.pb"), to_np(dy), out_name)
    tol1 = {"output_0.pb": max(1e-3, 4 * max(rel_l2(r[0], y64) for r in runs32))}
    if dx64 is not None:
        write_tensor(os.path.join(set1, "grad_input_0.pb"), to_np(dx64), in_name)
        tol1["grad_input_0.pb"] = max(1e-2, 4 * max(rel_l2(r[1], dx64) for r in runs32))
    written, min_ratio, file_grads = 0, math.inf, {}
    for pname, p in model.named_parameters():
        g = g64[pname]
        gnorm = 0.0 if g is None else torch.linalg.vector_norm(g).item()
        noise = 0.0 if g is None else max(
            torch.linalg.vector_norm(r[2][pname].double() - g).item() for r in runs32)
        if g is None or gnorm <= LEAVE_OUT_RATIO * noise:
            fail(name, f"parameter {pname} has a zero gradient (|g64| {gnorm:.3g}, |g32-g64| {noise:.3g})")
        if pname not in facts["init_of_param"]:
            fail(name, f"parameter {pname} (state_dict names {aliases[pname]}) has a gradient but is no"
                       f" initializer of the exported file; initializers that are not state_dict names:"
                       f" {sorted(facts['extra_initializers'])[:12]} (folded/transposed/renamed by the exporter?)")
        init = facts["init_of_param"][pname]
        if noise > 0:
            min_ratio = min(min_ratio, gnorm / noise)
        fname = f"grad_{init}.pb"
        write_tensor(os.path.join(set1, fname), to_np(g), init)
        file_grads[init] = to_np(g).astype(np.float32).astype(np.float64)
        tol1[fname] = max(1e-2, 4 * max(rel_l2(r[2][pname], g) for r in runs32))
        written += 1
    with open(os.path.join(set1, "tolerances.json"), "w") as f:
        json.dump(tol1, f, indent=1, sort_keys=True)

    feeds = {in_name: to_np(x)}
    step("float32 training paths done, files written")
    engine, ort_err = onnx_runtime_check(name, model_path, feeds, y64_eval, tol0["output_0.pb"], n_params)
    fd_err = None
    if n_params <= 5_000_000:
        dx_file = None if dx64 is None else to_np(dx64).astype(np.float32).astype(np.float64)
        fd_err = onnx_gradient_check(name, model_path, in_name, x, dy, dx_file, file_grads, seed + 2)

    worst = max(tol1.items(), key=lambda kv: kv[1])
    return {
        "model": name, "dir": os.path.basename(test_dir), "exporter": exporter, "opset": opset,
        "torch": torch.__version__, "onnx": onnx.__version__, "input": list(shape), "input_kind": kind,
        "output": list(out_shape), "params": n_params,
        "model_bytes": os.path.getsize(model_path), "dir_bytes": dir_size(test_dir),
        "grads_written": written, "tied": {p: a for p, a in aliases.items() if len(a) > 1},
        "eval_tol": tol0["output_0.pb"], "max_tol": worst[1], "max_tol_file": worst[0],
        "eval_out_std": act_std(y64_eval), "eval_vs_train": rel_l2(y64, y64_eval),
        "layer_std": [min(eval_range[0], train_range[0]), max(eval_range[1], train_range[1])],
        "min_kept_ratio": min_ratio, "runtime_check": engine, "runtime_err": ort_err, "fd_err": fd_err,
        "notes": notes, "seconds": time.time() - t0, **facts,
    }


def describe(info):
    shape = (f"input {info['input_kind']} {'x'.join(map(str, info['input']))}"
             f" output {'x'.join(map(str, info['output']))} params {info['params']}"
             f" model.onnx {info['model_bytes'] / 1e3:.0f} kB")
    if info.get("export_only"):
        first = f"{info['dir']}: {info['seconds']:.1f}s EXPORT ONLY (no test data) {shape} nodes {info['nodes']}"
    else:
        rt = info["runtime_check"]
        if info["runtime_err"] is not None:
            rt += f" err {info['runtime_err']:.2g}"
        rt += ", gradient files vs its central differences: " + (
            "not run" if info["fd_err"] is None else f"worst {info['fd_err']:.2g}")
        first = (f"{info['dir']}: {info['seconds']:.1f}s {shape} dir {info['dir_bytes'] / 1e3:.0f} kB"
                 f" nodes {info['nodes']} grads {info['grads_written']}"
                 f" out std {info['eval_out_std']:.3g} layers [{info['layer_std'][0]:.2g}, {info['layer_std'][1]:.2g}]"
                 f" |g64|/|g32-g64| >= {info['min_kept_ratio']:.3g}"
                 f" tol eval {info['eval_tol']:.3g} max {info['max_tol']:.3g} ({info['max_tol_file']})"
                 f" runtime check: {rt}")
    ops = " ".join(f"{k}:{v}" for k, v in sorted(info["ops"].items(), key=lambda kv: (-kv[1], kv[0])))
    extra = list(info["extra_initializers"].items())
    lines = [
        first,
        f"    ops: {ops}",
        f"    initializers: {len(info['init_of_param'])} parameters"
        + (f" (tied: {info['tied']} stored as {[info['init_of_param'][p] for p in info['tied']]})"
           if info["tied"] else "")
        + f", buffers {info['buffers_in_file']}"
        + (f" (not in file: {info['buffers_not_in_file']})" if info["buffers_not_in_file"] else "")
        + f", {len(extra)} other: " + ", ".join(f"{n}{v}" for n, v in extra[:8]) + (" ..." if len(extra) > 8 else ""),
    ]
    if info["symbolic_output"]:
        lines.append(f"    WARNING: the graph output's shape is {info['output_dims']} (symbolic dimensions)")
    if info["unshaped"]:
        lines.append(f"    WARNING: shape inference left {info['unshaped']} tensors without a shape,"
                     f" e.g. {info['unshaped_examples']}")
    for n in info["notes"]:
        lines.append(f"    note: {n}")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out_dir")
    ap.add_argument("--exporter", choices=("torchscript", "dynamo"), default="torchscript")
    ap.add_argument("--opset", type=int, help="ONNX opset (default 17 torchscript, 18 dynamo)")
    ap.add_argument("--models", help="comma-separated subset of: " + ",".join(MODELS))
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--small", action="store_true", help="the small models (default): " + ",".join(SMALL))
    size.add_argument("--full", action="store_true", help="the full-size models: " + ",".join(FULL))
    ap.add_argument("--dynamo-optimize", choices=("keep-weights", "off", "default"), default="keep-weights")
    ap.add_argument("--threads", type=int, default=2, help="torch CPU threads (default 2)")
    ap.add_argument("--progress", action="store_true", help="print a line after each stage of a model")
    ap.add_argument("--export-only", action="store_true",
                    help="export and verify model.onnx only: no test data, no reference runs (quick exporter check)")
    ap.add_argument("--summary", help="also write the per-model facts as JSON to this file")
    args = ap.parse_args()

    if args.models:
        models = [n for n in args.models.split(",") if n]
        unknown = [n for n in models if n not in MODELS]
        if unknown:
            ap.error(f"unknown models {unknown}; known: {','.join(MODELS)}")
    else:
        models = FULL if args.full else SMALL
    opset = args.opset or DEFAULT_OPSET[args.exporter]
    if opset < MIN_OPSET:
        ap.error(f"--opset must be at least {MIN_OPSET}")
    torch.set_num_threads(args.threads)
    if hasattr(torch.backends, "mha") and hasattr(torch.backends.mha, "set_fastpath_enabled"):
        torch.backends.mha.set_fastpath_enabled(False)
    os.makedirs(args.out_dir, exist_ok=True)
    print(f"torch {torch.__version__}, onnx {onnx.__version__}, exporter {args.exporter}, opset {opset}"
          + (f", --dynamo-optimize {args.dynamo_optimize}" if args.exporter == "dynamo" else ""), flush=True)

    summary, failed = [], []
    for name in models:
        try:
            info = generate(name, args.out_dir, args.exporter, opset, args.dynamo_optimize, args.progress,
                            args.export_only)
        except Exception as e:  # report and go on with the others
            failed.append(name)
            msg = str(e).strip().splitlines()
            short = "\n    ".join(msg[:12]) + ("\n    ..." if len(msg) > 12 else "")
            print(f"{name}: FAILED: {type(e).__name__}: {short}", flush=True)
            continue
        summary.append(info)
        print(describe(info), flush=True)
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump(summary, f, indent=1, default=str)
    if failed:
        print(f"FAILED: {','.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
