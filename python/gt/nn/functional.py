"""gt.nn.functional: stateless layers and losses (torch.nn.functional's API)."""
from .. import _tensor as T

relu = T.relu
sigmoid = T.sigmoid
tanh = T.tanh
softmax = T.softmax
log_softmax = T.log_softmax


def linear(x, weight, bias=None):
    """x: (..., in) @ weight.T (in, out) + bias (out,) -> (..., out)."""
    y = T.matmul(x, weight.T)
    return y + bias if bias is not None else y


def mse_loss(input, target, reduction="mean"):
    """mean((input - target)^2); reduction 'mean', 'sum' or 'none'."""
    d = input - target
    return _reduce(d * d, reduction)


def cross_entropy(input, target, reduction="mean"):
    """Softmax cross-entropy of logits `input` (N, C) against integer class indices `target` (N,).

    -log_softmax(input)[n, target[n]], averaged over N ('mean'), summed, or per row ('none').
    Raises ValueError if the shapes do not fit and TypeError if target is not an integer tensor.
    """
    if input.ndim != 2:
        raise ValueError(f"cross_entropy expects logits of shape (N, C), got {input.shape}")
    if target.dtype.is_floating_point or target.dtype.name == "bool":
        raise TypeError(f"cross_entropy expects integer class indices, got {target.dtype}")
    if target.shape != input.shape[:1]:
        raise ValueError(f"cross_entropy: target shape {target.shape} does not match batch size {input.shape[0]}")
    logp = T.log_softmax(input, dim=1)
    nll = -T.sum(logp * T.one_hot(target, input.shape[1], dtype=input.dtype), 1)
    return _reduce(nll, reduction)


def _reduce(x, reduction):
    if reduction == "mean":
        return T.mean(x)
    if reduction == "sum":
        return T.sum(x)
    if reduction == "none":
        return x
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
