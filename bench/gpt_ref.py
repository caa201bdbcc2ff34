"""PyTorch's reference for bench/gpt_bench.sh: the decoder that
models/char_gpt/make_char_gpt.py writes for dlcaffe, written plainly with
torch.nn, in FP32:

  token nn.Embedding (its weight is also the head's: tied), learned positions
  (an nn.Parameter of window x width), pre-LN blocks (nn.LayerNorm eps 1e-5;
  nn.Linear D->3D; causal F.scaled_dot_product_attention over (B, H, T, D/H),
  scale 1/sqrt(D/H); nn.Linear D->D; residual; nn.LayerNorm; nn.Linear
  D->4D; exact (erf) F.gelu; nn.Linear 4D->D; residual), a final LayerNorm,
  logits = x @ wte^T, mean cross-entropy over all B*T positions. Initialised
  as GPT-2 (and our prototxt): N(0, 0.02), the residual projections
  N(0, 0.02/sqrt(2L)), zero biases.

It measures what `dlcaffe bench` and `dlcaffe generate` measure, under two
settings in one run: PyTorch's own defaults (matmul TF32 off, cuDNN TF32 on
in PyTorch 2.x; the flags are read and printed, not assumed), then FP32 with
TF32 off everywhere:

  forward   random tokens copied in, the logits (B, T, V) computed under
            no_grad and copied out to host memory (as `dlcaffe bench
            --mode=forward` does), synchronised wall time per iteration after
            warm-up; also the time without the two copies; peak memory
            (torch.cuda.max_memory_allocated after reset_peak_memory_stats).
  train     a step: tokens and targets copied in, forward, cross-entropy,
            backward, torch.optim.Adam(lr=1e-4).step(), zero_grad(
            set_to_none=True); time per step and peak memory.
  generate  batch 1, a prompt of 16 random tokens, then --tokens greedy tokens
            with a key/value cache (per-layer K and V preallocated to the
            window, one new token per step attending over the cache); each
            token is read back to the host as it comes (as a generator does).
            Tokens/s over the tokens after the first, after one warm-up run.

On a PyTorch without F.scaled_dot_product_attention (before 2.0) attention
is a plain softmax(QK^T * scale + causal mask) V, and the output says so.
Device: cuda if available, else cpu (no peak memory there).
"""
import argparse
import math
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

HAS_SDPA = hasattr(F, "scaled_dot_product_attention")


def attend(q, k, v, causal):
    """Attention of q (B, H, Tq, Dk) over k, v (B, H, Tk, Dk)."""
    if HAS_SDPA:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    if causal:
        tq, tk = q.shape[-2], k.shape[-2]
        mask = torch.ones(tq, tk, dtype=torch.bool, device=q.device).triu(1 + tk - tq)
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.matmul(torch.softmax(scores, dim=-1), v)


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width, eps=1e-5)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width, eps=1e-5)
        self.fc = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x, cache=None, position=0):
        b, t, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, h, d // h).transpose(1, 2) for z in (q, k, v))
        if cache is None:
            a = attend(q, k, v, causal=True)
        else:
            # Keys and values of positions [0, position + t) from the cache.
            keys, values = cache
            keys[:, :, position:position + t] = k
            values[:, :, position:position + t] = v
            k, v = keys[:, :, :position + t], values[:, :, :position + t]
            # Several new tokens only as the prompt, from position 0 (where
            # is_causal's top-left alignment is the right mask); one new
            # token sees the whole cache.
            assert t == 1 or position == 0
            a = attend(q, k, v, causal=t > 1)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, vocab, layers, width, heads, window):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Parameter(torch.zeros(window, width))
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width, eps=1e-5)
        std, residual_std = 0.02, 0.02 / math.sqrt(2 * layers)
        nn.init.normal_(self.wte.weight, std=std)
        nn.init.normal_(self.wpe, std=std)
        for block in self.blocks:
            for linear in (block.qkv, block.proj, block.fc, block.fc2):
                is_residual = linear is block.proj or linear is block.fc2
                nn.init.normal_(linear.weight, std=residual_std if is_residual else std)
                nn.init.zeros_(linear.bias)

    def forward(self, tokens, caches=None, position=0):
        t = tokens.shape[1]
        x = self.wte(tokens) + self.wpe[position:position + t]
        for i, block in enumerate(self.blocks):
            x = block(x, None if caches is None else caches[i], position)
        # The head: the token embedding's weights, no bias (tied).
        return F.linear(self.ln_f(x), self.wte.weight)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(fn, iters, warmup, device):
    """Mean ms of fn over iters after warmup calls; peak MiB over them all."""
    if device.type == "cuda":
        sync(device)
        torch.cuda.reset_peak_memory_stats()
    for _ in range(warmup):
        fn()
    sync(device)
    start = time.perf_counter()
    for _ in range(iters):
        fn()
    sync(device)
    ms = (time.perf_counter() - start) / iters * 1e3
    peak = torch.cuda.max_memory_allocated() / 2**20 if device.type == "cuda" else None
    return ms, peak


def mib(peak):
    return "n/a" if peak is None else "%.1f" % peak


def make_model(a, device):
    torch.manual_seed(0)
    return GPT(a.vocab, a.layers, a.width, a.heads, a.window).to(device)


def release(device):
    if device.type == "cuda":
        torch.cuda.empty_cache()


def bench_forward(a, device, label):
    model = make_model(a, device).eval()
    gen = torch.Generator().manual_seed(1)
    tokens_host = torch.randint(0, a.vocab, (a.batch, a.window), generator=gen)
    tokens = torch.empty_like(tokens_host, device=device)
    logits_host = torch.empty(a.batch, a.window, a.vocab)  # pageable, as dlcaffe's

    def with_copies():
        tokens.copy_(tokens_host)
        with torch.no_grad():
            logits_host.copy_(model(tokens))

    def device_only():
        with torch.no_grad():
            model(tokens)

    ms, peak = timed(with_copies, a.iters, a.warmup, device)
    ms_device, _ = timed(device_only, a.iters, a.warmup, device)
    print("%s forward  %.3f ms/iter  peak %s MiB  (%.3f ms without copying tokens in and "
          "logits out)" % (label, ms, mib(peak), ms_device), flush=True)


def bench_train(a, device, label):
    model = make_model(a, device).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    gen = torch.Generator().manual_seed(1)
    tokens_host = torch.randint(0, a.vocab, (a.batch, a.window), generator=gen)
    targets_host = torch.randint(0, a.vocab, (a.batch, a.window), generator=gen)
    tokens = torch.empty_like(tokens_host, device=device)
    targets = torch.empty_like(targets_host, device=device)

    def step():
        tokens.copy_(tokens_host)
        targets.copy_(targets_host)
        logits = model(tokens)
        loss = F.cross_entropy(logits.view(-1, a.vocab), targets.view(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    ms, peak = timed(step, a.iters, a.warmup, device)
    print("%s train  %.3f ms/iter  peak %s MiB  (forward, cross-entropy, backward, Adam)"
          % (label, ms, mib(peak)), flush=True)


def generate(model, prompt, tokens, window, device):
    """Greedy tokens after `prompt` with a key/value cache; returns them, the
    ms to the first and the seconds of the rest."""
    caches = [tuple(torch.empty(1, b.heads, window, b.qkv.in_features // b.heads, device=device)
                    for _ in range(2)) for b in model.blocks]
    out = []
    with torch.no_grad():
        start = time.perf_counter()
        logits = model(prompt, caches, 0)
        out.append(int(logits[0, -1].argmax()))
        first_ms = (time.perf_counter() - start) * 1e3
        position = prompt.shape[1]
        start = time.perf_counter()
        for _ in range(tokens - 1):
            step = torch.tensor([[out[-1]]], device=device)
            logits = model(step, caches, position)
            position += 1
            out.append(int(logits[0, -1].argmax()))
        rest_s = time.perf_counter() - start
    return out, first_ms, rest_s


def bench_generate(a, device, label):
    model = make_model(a, device).eval()
    prompt_length = min(16, a.window - 1)
    tokens = min(a.tokens, a.window - prompt_length)
    if tokens < a.tokens:
        print("(generate: %d tokens, what fits the window of %d after the prompt)"
              % (tokens, a.window))
    gen = torch.Generator().manual_seed(2)
    prompt = torch.randint(0, a.vocab, (1, prompt_length), generator=gen).to(device)
    generate(model, prompt, min(tokens, 8), a.window, device)  # warm-up
    ids, first_ms, rest_s = generate(model, prompt, tokens, a.window, device)
    # The cache must give what the whole context gives.
    with torch.no_grad():
        full = model(torch.cat([prompt, torch.tensor([ids[:-1]], device=device)], dim=1))
    if full[0, prompt_length - 1:].argmax(-1).tolist() != ids:
        print("(generate: warning: greedy tokens with the cache differ from the whole-context "
              "forward's; FP32 near-ties can do that)")
    rate = (tokens - 1) / rest_s if tokens > 1 and rest_s > 0 else float("nan")
    print("%s generate  %.1f tokens/s  (batch 1, prompt %d, first token after %.1f ms; then %d "
          "tokens in %.3f s, key/value cache)" % (label, rate, prompt_length, first_ms,
                                                   tokens - 1, rest_s), flush=True)


def has(obj, name):
    """hasattr for torch.backends' modules, whose __getattr__ may assert."""
    try:
        getattr(obj, name)
        return True
    except Exception:
        return False


def tf32_flags():
    """PyTorch's TF32 flags for matmul (cuBLAS) and cuDNN, as booleans."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # 2.9+ calls the flags legacy
            return torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    except Exception:  # a PyTorch with the new API only
        return (torch.backends.cuda.matmul.fp32_precision == "tf32",
                torch.backends.cudnn.conv.fp32_precision == "tf32")


def tf32_off():
    matmul = torch.backends.cuda.matmul
    if has(matmul, "fp32_precision"):
        # PyTorch 2.9+: the same switches, through the API that replaces
        # allow_tf32 (the two must not be mixed).
        matmul.fp32_precision = "ieee"
        names = ["cuda.matmul"]
        for name in ("conv", "rnn"):
            if has(torch.backends.cudnn, name) and has(getattr(torch.backends.cudnn, name),
                                                      "fp32_precision"):
                getattr(torch.backends.cudnn, name).fp32_precision = "ieee"
                names.append("cudnn." + name)
        return "fp32_precision = 'ieee' for %s" % ", ".join(names)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return "allow_tf32 = False for matmul and cuDNN"


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", type=int, default=50257)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--width", type=int, default=768)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--window", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=128, help="generate: tokens after the prompt")
    parser.add_argument("--mode", choices=("forward", "train", "generate", "all"), default="all")
    a = parser.parse_args()
    if a.width % a.heads:
        parser.error("--width must split into --heads")
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    where = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print("pytorch %s on %s: GPT vocab %d, %d layers, width %d, %d heads, window %d, batch %d, "
          "FP32" % (torch.__version__, where, a.vocab, a.layers, a.width, a.heads, a.window,
                    a.batch))
    print("pytorch attention: %s" % (
        "F.scaled_dot_product_attention" if HAS_SDPA else
        "plain softmax(QK^T)V with a causal mask (this PyTorch %s has no "
        "F.scaled_dot_product_attention)" % torch.__version__))

    model = make_model(a, device)
    parameters = sum(p.numel() for p in model.parameters())  # the tied head once
    gen = torch.Generator().manual_seed(3)
    tokens = torch.randint(0, a.vocab, (a.batch, a.window), generator=gen).to(device)
    targets = torch.randint(0, a.vocab, (a.batch, a.window), generator=gen).to(device)
    with torch.no_grad():
        loss = F.cross_entropy(model(tokens).view(-1, a.vocab), targets.view(-1)).item()
    # At init the logits are nearly independent with variance 0.02^2 * D (the
    # final LayerNorm's unit features times the tied N(0, 0.02) embedding),
    # so the expected loss is about ln V + 0.02^2 * D / 2.
    print("pytorch parameters %d (tied head counted once); loss at init %.4f (ln V = %.4f; "
          "expected about %.4f with logits of std %.2f)"
          % (parameters, loss, math.log(a.vocab), math.log(a.vocab) + 0.0004 * a.width / 2,
             0.02 * math.sqrt(a.width)), flush=True)
    del model, tokens, targets
    release(device)

    # PyTorch's defaults first (untouched), then TF32 off.
    matmul, cudnn = tf32_flags()
    onoff = {True: "on", False: "off"}
    settings = [("pytorch default (matmul TF32 %s, cuDNN TF32 %s)" % (onoff[matmul], onoff[cudnn]),
                 None),
                ("pytorch FP32 (TF32 off)", tf32_off)]
    modes = ("forward", "train", "generate") if a.mode == "all" else (a.mode,)
    for label, setting in settings:
        if setting:
            how = setting()
            print("(%s: %s)" % (label, how))
        for mode in modes:
            {"forward": bench_forward, "train": bench_train,
             "generate": bench_generate}[mode](a, device, label)
            release(device)  # the measurement's tensors went with its function


if __name__ == "__main__":
    main()
