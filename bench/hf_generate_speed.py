#!/usr/bin/env python3
"""Greedy generation speed of a Hugging Face causal LM, dlcaffe against
transformers, on one GPU in one command.

The model: GPT-2 small's shape (transformers' GPT2Config defaults: 12 layers,
768 wide, 12 heads, 50257 tokens, 1024 positions) with random weights (seed
0), exported by torch.onnx.export with its defaults and the sequence axis
dynamic, as tools/onnx/make_hf_tests.py exports the test models. A prompt of
PROMPT random ids, then N greedy tokens for each N of --tokens:

  transformers  model.generate(do_sample=False, use_cache=True) on CUDA, FP32
                with TF32 allowed (PyTorch's fast mode for FP32 weights); the
                rate is (N - 2) / (time(N) - time(2)): the tokens after the
                second, as dlcaffe's log gives it.
  dlcaffe       `dlcaffe generate --model=gpt2.onnx --prompt_ids=...
                --tokens=N --temperature=0` with the key/value cache (the
                default); its log's rate, from the second token on. For N of
                --uncached also --kv_cache=false: every token reruns the
                sequence, and the net, following its input's length, is
                imported again for each new length (slow on a large file).

A cache makes a token cost O(T) work: the rate stays about the same as N
grows; without it, each token reruns the sequence, O(T^2) in all.

The tokens: transformers in FP32 with TF32 off is the reference; the table
says how many of each run's first tokens equal it (near-ties on random
weights can flip a later one).

    python3 bench/hf_generate_speed.py --dlcaffe .../dlcaffe [--tokens 128,512]
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import torch


def build_model():
    import transformers as tf
    torch.manual_seed(0)
    cfg = tf.GPT2Config(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    return tf.GPT2LMHeadModel(cfg).eval()


def export(model, path, prompt_length):
    ids = torch.randint(0, model.config.vocab_size, (1, prompt_length))
    seq = torch.export.Dim("sequence", min=2, max=model.config.n_positions)
    model.config.use_cache = False
    torch.onnx.export(model, (ids,), path, input_names=["input_ids"], output_names=["logits"],
                      dynamo=True, external_data=False, dynamic_shapes=({1: seq},))
    model.config.use_cache = True


@torch.no_grad()
def transformers_run(model, prompt, tokens, tf32):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32

    def timed(n):
        torch.cuda.synchronize()
        start = time.perf_counter()
        out = model.generate(prompt, do_sample=False, max_new_tokens=n, min_new_tokens=n,
                             use_cache=True, pad_token_id=0)
        torch.cuda.synchronize()
        return out[0, prompt.shape[1]:].tolist(), time.perf_counter() - start

    timed(min(tokens, 8))  # warm-up
    _, two = timed(2)
    ids, all_ = timed(tokens)
    return ids, (tokens - 2) / (all_ - two)


def dlcaffe_run(dlcaffe, onnx_path, prompt, tokens, kv_cache):
    cmd = [dlcaffe, "generate", "--model=" + onnx_path,
           "--prompt_ids=" + ",".join(str(i) for i in prompt), "--tokens=%d" % tokens,
           "--temperature=0", "--kv_cache=%s" % ("true" if kv_cache else "false")]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit("dlcaffe generate failed:\n" + run.stdout[-2000:] + run.stderr[-4000:])
    ids = [int(t) for t in run.stdout.split()]
    rate = re.search(r"\(([0-9.e+-]+) tokens/s", run.stderr)
    line = [l for l in run.stderr.splitlines() if "tokens/s" in l]
    return ids, float(rate.group(1)) if rate else float("nan"), line[-1].split("] ")[-1] if line else ""


def agree(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dlcaffe", required=True)
    p.add_argument("--tokens", default="128,512")
    p.add_argument("--prompt", type=int, default=16)
    p.add_argument("--uncached", default="32", help="N to run with --kv_cache=false too ('' none)")
    a = p.parse_args()
    device = torch.device("cuda")
    print("device: %s; torch %s" % (torch.cuda.get_device_name(0), torch.__version__), flush=True)
    model = build_model()
    work = tempfile.mkdtemp()
    onnx_path = os.path.join(work, "gpt2.onnx")
    start = time.perf_counter()
    export(model, onnx_path, a.prompt)
    print("exported %s (%.0f MB) in %.0f s" % (onnx_path, os.path.getsize(onnx_path) / 2**20,
                                               time.perf_counter() - start), flush=True)
    model = model.to(device)
    gen = torch.Generator().manual_seed(2)
    prompt = torch.randint(0, model.config.vocab_size, (1, a.prompt), generator=gen)
    rows = []
    for n in sorted({int(t) for t in (a.tokens + "," + a.uncached).split(",") if t}):
        ref_ids, _ = transformers_run(model, prompt.to(device), n, tf32=False)
        fast_ids, fast_rate = transformers_run(model, prompt.to(device), n, tf32=True)
        print("N=%d transformers: %.1f tokens/s TF32, %d tokens as with TF32 off"
              % (n, fast_rate, agree(fast_ids, ref_ids)), flush=True)
        ours_ids, ours_rate, ours_line = dlcaffe_run(a.dlcaffe, onnx_path, prompt[0].tolist(), n, True)
        print("N=%d dlcaffe (cache): %s" % (n, ours_line), flush=True)
        row = [n, fast_rate, agree(fast_ids, ref_ids), ours_rate, agree(ours_ids, ref_ids)]
        if str(n) in a.uncached.split(","):
            plain_ids, plain_rate, plain_line = dlcaffe_run(a.dlcaffe, onnx_path, prompt[0].tolist(), n, False)
            print("N=%d dlcaffe (no cache): %s" % (n, plain_line), flush=True)
            row += [plain_rate, agree(plain_ids, ref_ids)]
        rows.append(row)
    print("\n| new tokens | transformers TF32 tok/s (agree) | dlcaffe cache tok/s (agree) | x "
          "| dlcaffe no cache tok/s (agree) |")
    print("|---|---|---|---|---|")
    for r in rows:
        plain = "%.1f (%d)" % (r[5], r[6]) if len(r) > 5 else "n/a"
        print("| %d | %.1f (%d) | %.1f (%d) | %.2f | %s |" % (r[0], r[1], r[2], r[3], r[4],
                                                              r[3] / r[1], plain))
    print("(agree: leading tokens equal to transformers FP32 with TF32 off; x: dlcaffe's "
          "tokens/s over transformers')")


if __name__ == "__main__":
    main()
