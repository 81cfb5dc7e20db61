"""Trains a small character-level GPT on the Jargon File through GT, then samples from it.

The corpus is Debian's `jargon-text` (/usr/share/doc/jargon-text/jargon.txt.gz, 1.7 MB, public
domain); nothing is downloaded. The model is GPT-2's shape, scaled down (Radford et al. 2019):
token + position embeddings, pre-LayerNorm blocks of causal self-attention and a GELU MLP, a
final LayerNorm and an output head tied to the token embedding; AdamW with a cosine schedule.

    python examples/char_gpt.py [--steps 600] [--batch-size 32] [--block-size 64]
                                [--layers 2] [--heads 4] [--embd 128] [--sample 300]

It prints the loss of every step, the validation loss every --eval-every steps beside the
unigram entropy of the corpus (the loss of a model that knows character frequencies only), and
a sample of generated text at the end.

The script names signals (see gt.signal) and a sharding config decides what they mean, so the
same script runs data-, tensor- or pipeline-parallel:

    python examples/char_gpt.py --workers 4 --config examples/configs/data_parallel.yaml
    python examples/char_gpt.py --workers 4 --config examples/configs/char_gpt_tensor_parallel.yaml
    python examples/char_gpt.py --workers 2 --config examples/configs/char_gpt_pipeline.yaml

Signals nest and the innermost one the config names applies: 'params' (the model and the
optimizer) and 'data' (the batch and the compute on it) hold everything; inside them 'embed',
'block0', 'block1', ... and 'head' name the model's stages, and 'mlp_up' / 'mlp_down' the two
weights of each block's MLP.
"""
import argparse
import gzip
import math
import os
import time

import numpy as np

import gt
import gt.nn as nn
import gt.nn.functional as F

CORPUS = os.environ.get("GT_CHAR_CORPUS", "/usr/share/doc/jargon-text/jargon.txt.gz")


def load_corpus(path=CORPUS):
    """The text as a str ('apt-get install jargon-text' provides the default corpus)."""
    if not os.path.exists(path):
        raise SystemExit(f"corpus {path} not found: run scripts/install-deps.sh (Debian package jargon-text) "
                         "or set GT_CHAR_CORPUS to a text file")
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        return f.read().decode("utf-8", errors="replace")


class Vocabulary:
    def __init__(self, text):
        self.chars = sorted(set(text))
        self.index = {c: i for i, c in enumerate(self.chars)}

    def __len__(self):
        return len(self.chars)

    def encode(self, text):
        return np.array([self.index[c] for c in text], dtype=np.int64)

    def decode(self, ids):
        return "".join(self.chars[int(i)] for i in ids)


def unigram_entropy(train, val, vocab_size):
    """Cross-entropy (nats/char) on `val` of character frequencies counted on `train`
    (add-one smoothed): the loss of the best model that ignores context."""
    counts = np.bincount(train, minlength=vocab_size) + 1.0
    p = counts / counts.sum()
    return float(-np.log(p[val]).mean())


class CausalSelfAttention(nn.Module):
    """Multi-head attention where position t sees positions <= t (Vaswani et al. 2017)."""

    def __init__(self, embd, heads, block_size):
        super().__init__()
        assert embd % heads == 0, "embd must be a multiple of heads"
        self.heads = heads
        self.qkv = nn.Linear(embd, 3 * embd)
        self.proj = nn.Linear(embd, embd)
        self.register_buffer("mask", gt.tensor(np.tril(np.ones((block_size, block_size), dtype=bool))))

    def forward(self, x):  # (B, T, C) -> (B, T, C)
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))  # (B, H, T, hd)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // self.heads))
        att = att.masked_fill(~self.mask[:T, :T], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, T, C)
        return self.proj(y)


class MLP(nn.Module):
    """Linear(embd, 4 embd), GELU, Linear(4 embd, embd), dropout. The two weights carry the
    signals 'mlp_up' and 'mlp_down' so a config can split them Megatron-style (Shoeybi et al.
    2019): `up` by output features (column-parallel), `down` by input features (row-parallel,
    one all_reduce). `down`'s bias is a separate parameter under the enclosing signal, since a
    row-parallel layer adds it once, after the all_reduce."""

    def __init__(self, embd, dropout):
        super().__init__()
        with gt.signal.context("mlp_up"):
            self.up = nn.Linear(embd, 4 * embd)
        with gt.signal.context("mlp_down"):
            self.down = nn.Linear(4 * embd, embd, bias=False)
        self.down_bias = nn.Parameter(gt.zeros(embd))
        self.drop = nn.Dropout(dropout)

    def forward(self, x):  # (B, T, C) -> (B, T, C)
        return self.drop(self.down(F.gelu(self.up(x))) + self.down_bias)


class Block(nn.Module):
    def __init__(self, embd, heads, block_size, dropout):
        super().__init__()
        self.ln1 = nn.LayerNorm(embd)
        self.attn = CausalSelfAttention(embd, heads, block_size)
        self.ln2 = nn.LayerNorm(embd)
        self.mlp = MLP(embd, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, vocab_size, block_size, layers, heads, embd, dropout=0.0):
        super().__init__()
        self.block_size = block_size
        with gt.signal.context("embed"):
            self.tok = nn.Embedding(vocab_size, embd)
            self.pos = nn.Embedding(block_size, embd)
        self.blocks = nn.ModuleList()
        for i in range(layers):
            with gt.signal.context(f"block{i}"):
                self.blocks.append(Block(embd, heads, block_size, dropout))
        with gt.signal.context("head"):
            self.ln_f = nn.LayerNorm(embd)
        for name, p in self.named_parameters():  # GPT-2's initialisation
            if name.endswith("weight") and p.ndim == 2:
                nn.init.normal_(p, 0.0, 0.02)
            if name.endswith("proj.weight") or name.endswith("mlp.down.weight"):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * layers))
            if name.endswith("bias") and "ln" not in name:
                nn.init.zeros_(p)

    def forward(self, idx):  # (B, T) int64 -> logits (B, T, V)
        B, T = idx.shape
        with gt.signal.context("embed"):
            x = self.tok(idx) + self.pos.weight[:T]
        for i, block in enumerate(self.blocks):
            with gt.signal.context(f"block{i}"):
                x = block(x)
        with gt.signal.context("head"):
            return self.ln_f(x) @ self.tok.weight.T  # tied output head


def batch(data, rng, batch_size, block_size):
    starts = rng.integers(0, len(data) - block_size - 1, batch_size)
    x = np.stack([data[s:s + block_size] for s in starts])
    y = np.stack([data[s + 1:s + block_size + 1] for s in starts])
    with gt.signal.context("data"):
        return gt.tensor(x), gt.tensor(y)


def loss_of(model, x, y):
    with gt.signal.context("data"):
        logits = model(x)
        with gt.signal.context("head"):
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def evaluate(model, data, rng, batch_size, block_size, batches=8):
    model.eval()
    with gt.no_grad():
        losses = [loss_of(model, *batch(data, rng, batch_size, block_size)) for _ in range(batches)]
        value = float(np.mean([l.item() for l in losses]))
    model.train()
    return value


def sample(model, vocab, prompt, length, rng, temperature=0.8):
    """Generates `length` characters after `prompt`. The context is padded on the right to the
    block size (causal attention makes the padding invisible to earlier positions), so every
    step has the same shapes and reuses the same compiled kernels."""
    model.eval()
    ids = list(vocab.encode(prompt))
    with gt.no_grad():
        for _ in range(length):
            window = ids[-model.block_size:]
            context = np.zeros((1, model.block_size), dtype=np.int64)
            context[0, :len(window)] = window
            logits = model(gt.tensor(context))[0, len(window) - 1] / temperature
            p = logits.softmax(-1).numpy().astype(np.float64)
            ids.append(int(rng.choice(len(p), p=p / p.sum())))
    model.train()
    return vocab.decode(ids)


def train(args):
    text = load_corpus(args.corpus)
    vocab = Vocabulary(text)
    data = vocab.encode(text)
    n = int(0.9 * len(data))
    train_data, val_data = data[:n], data[n:]
    unigram = unigram_entropy(train_data, val_data, len(vocab))
    print(f"corpus {args.corpus}: {len(text):,} characters, vocabulary {len(vocab)}, "
          f"unigram entropy {unigram:.3f} nats/char")

    gt.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    with gt.signal.context("params"):
        model = GPT(len(vocab), args.block_size, args.layers, args.heads, args.embd, args.dropout)
    print(f"GPT: {sum(p.numel() for p in model.parameters()):,} parameters, {args.layers} layers, "
          f"{args.heads} heads, embd {args.embd}, block {args.block_size}")
    decay = [p for n_, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n_, p in model.named_parameters() if p.ndim < 2]
    opt = gt.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                         lr=args.lr, betas=(0.9, 0.95))
    warmup = max(1, args.steps // 20)
    sched = gt.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * min(s, args.steps) / args.steps))))

    history, val = [], None
    start = time.perf_counter()
    for step in range(1, args.steps + 1):
        x, y = batch(train_data, rng, args.batch_size, args.block_size)
        loss = loss_of(model, x, y)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        with gt.signal.context("params"):
            opt.step()
        sched.step()
        value = loss.item()
        history.append(value)
        elapsed = time.perf_counter() - start
        print(f"step {step:4d}  loss {value:.4f}  lr {sched.get_last_lr()[0]:.2e}  {1000 * elapsed / step:.0f} ms/step",
              flush=True)
        if step % args.eval_every == 0 or step == args.steps:
            val = evaluate(model, val_data, rng, args.batch_size, args.block_size)
            print(f"  validation loss {val:.4f} nats/char (unigram entropy {unigram:.4f})", flush=True)
    step_ms = 1000 * (time.perf_counter() - start) / args.steps
    if args.sample:
        print("--- sample ---")
        print(sample(model, vocab, "The ", args.sample, rng))
        print("--------------")
    print(f"final validation loss {val:.4f} vs unigram entropy {unigram:.4f} nats/char; {step_ms:.0f} ms/step")
    return dict(history=history, val=val, unigram=unigram, step_ms=step_ms)


def parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--block-size", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--embd", type=int, default=128)
    p.add_argument("--dropout", type=float, default=0.0)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--sample", type=int, default=300, help="characters to generate at the end (0: none)")
    p.add_argument("--corpus", default=CORPUS)
    p.add_argument("--connect", default="", help="HOST:PORT of a running dispatcher")
    p.add_argument("--workers", type=int, default=1, help="local workers to start")
    p.add_argument("--config", default="", help="sharding config (YAML), e.g. examples/configs/char_gpt_pipeline.yaml")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def start(args):
    """Connects or starts the local workers, and loads the sharding config if one is given."""
    if args.connect:
        gt.connect(args.connect)
    else:
        gt.gpu_workers(args.workers)
    if args.config:
        gt.load_config(args.config)


if __name__ == "__main__":
    args = parse()
    start(args)
    train(args)
