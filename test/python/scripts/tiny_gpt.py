"""A small character-level GPT in the style of public PyTorch GPT scripts, run on GT unchanged
(`import gt as torch`): pre-norm blocks with causal F.scaled_dot_product_attention, weight tying
between the token embedding and the output head, AdamW with two parameter groups (weight decay
on matrices only), gradient clipping, and sampling with temperature, top-k and
torch.multinomial.

    python test/python/scripts/tiny_gpt.py [--steps 200]
"""
import argparse
import math

import gt as torch
import gt.nn as nn
import gt.nn.functional as F

TEXT = ("the quick brown fox jumps over the lazy dog. " * 8 +
        "a journey of a thousand miles begins with a single step. " * 8)


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        batch, time, width = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(width, dim=2)
        q, k, v = (t.view(batch, time, self.heads, width // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).contiguous().view(batch, time, width))
        return x + self.mlp(self.norm2(x))


class TinyGPT(nn.Module):
    def __init__(self, vocab, context, width=48, heads=4, layers=2):
        super().__init__()
        self.context = context
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(context, width)
        self.blocks = nn.ModuleList([Block(width, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.tokens.weight  # tied
        for name, p in self.named_parameters():
            if name.endswith("weight") and p.dim() == 2:
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / (math.sqrt(2 * layers) if "proj" in name else 1))

    def forward(self, idx, targets=None):
        pos = torch.arange(idx.size(1), dtype=torch.long)
        x = self.tokens(idx) + self.positions(pos)
        for block in self.blocks:
            x = block(x)
        logits = self.head(self.norm(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))

    def optimizer(self, lr, weight_decay):
        params = {n: p for n, p in self.named_parameters() if p.requires_grad}
        decay = [p for p in params.values() if p.dim() >= 2]
        no_decay = [p for p in params.values() if p.dim() < 2]
        groups = [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]
        return torch.optim.AdamW(groups, lr=lr, betas=(0.9, 0.95))

    @torch.no_grad()
    def sample(self, idx, steps, temperature=1.0, top_k=None):
        for _ in range(steps):
            logits, _ = self(idx[:, -self.context:])
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                kth = torch.topk(logits, min(top_k, logits.size(-1))).values[:, [-1]]
                logits[logits < kth] = -float("inf")
            nxt = torch.multinomial(F.softmax(logits, dim=-1), num_samples=1)
            idx = torch.cat((idx, nxt), dim=1)
        return idx


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--context", type=int, default=24)
    args = p.parse_args(argv)
    torch.manual_seed(0)
    chars = sorted(set(TEXT))
    data = torch.tensor([chars.index(c) for c in TEXT], dtype=torch.long)
    model = TinyGPT(len(chars), args.context)
    opt = model.optimizer(lr=3e-3, weight_decay=0.1)
    g = torch.Generator().manual_seed(0)
    losses = []
    for step in range(args.steps):
        starts = torch.randperm(len(data) - args.context - 1, generator=g)[:16]
        x = torch.stack([data[s:s + args.context] for s in starts.tolist()])
        y = torch.stack([data[s + 1:s + 1 + args.context] for s in starts.tolist()])
        _, loss = model(x, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if step % 50 == 0:
            print(f"step {step}: loss {losses[-1]:.3f}")
    model.eval()
    prompt = torch.tensor([[chars.index("t")]], dtype=torch.long)
    out = model.sample(prompt, 40, temperature=0.8, top_k=5)[0].tolist()
    text = "".join(chars[i] for i in out)
    print(f"final loss {losses[-1]:.3f}; sample: {text!r}")
    return losses, text, opt


if __name__ == "__main__":
    main()
