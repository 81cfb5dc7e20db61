"""A training loop in the style of public PyTorch scripts that use autograd beyond backward():
a gradient penalty through torch.autograd.grad(create_graph=True) (as in WGAN-GP, Gulrajani et
al. 2017), a forward hook that records activation statistics, a tensor hook that clips a
gradient, a module backward hook, and a custom autograd.Function (a straight-through
estimator). Written against PyTorch's API and run on GT unchanged: `import gt as torch`.

    python test/python/scripts/hooks_and_grad.py [--steps 60]
"""
import argparse

import gt as torch
import gt.nn as nn
import gt.nn.functional as F


class RoundSTE(torch.autograd.Function):
    """round(x) forward, identity backward (Bengio et al. 2013's straight-through estimator)."""

    @staticmethod
    def forward(ctx, x):
        return torch.floor(x + 0.5)

    @staticmethod
    def backward(ctx, grad):
        return grad


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh())
        self.head = nn.Linear(32, 1)

    def forward(self, x):
        return self.head(self.body(x)).squeeze(-1)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--penalty", type=float, default=0.1)
    args = p.parse_args(argv)

    torch.manual_seed(0)
    model = Critic()
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    stats, backward_calls = [], []
    model.body.register_forward_hook(lambda m, inp, out: stats.append(out.detach().abs().mean()))
    model.head.register_full_backward_hook(lambda m, gin, gout: backward_calls.append(gout[0].shape))
    model.head.weight.register_hook(lambda g: g.clamp(-1.0, 1.0))  # clip this gradient elementwise

    x = torch.randn(256, 2)
    target = torch.sin(3 * x[:, 0]) * x[:, 1]
    losses = []
    for step in range(args.steps):
        inputs = x.clone().requires_grad_(True)
        pred = model(RoundSTE.apply(inputs * 8) / 8)  # inputs quantized to 1/8, gradients pass through
        fit = F.mse_loss(pred, target)
        (grad_x,) = torch.autograd.grad(pred.sum(), inputs, create_graph=True)
        penalty = ((grad_x.norm(dim=1) - 1) ** 2).mean()
        loss = fit + args.penalty * penalty
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(fit.item())
        if step % 20 == 0:
            print(f"step {step}: fit {losses[-1]:.4f}  penalty {penalty.item():.4f}  "
                  f"|activations| {stats[-1].item():.3f}")
    print(f"final fit {losses[-1]:.4f} (first {losses[0]:.4f}); {len(backward_calls)} backward hook calls")
    return losses, stats, backward_calls


if __name__ == "__main__":
    main()
