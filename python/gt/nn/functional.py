"""gt.nn.functional: stateless layers and losses, with torch.nn.functional's names and rules.

Shapes use PyTorch's letters: N batch, C classes, D features, (*) any extra axes.
"""
import math

from .. import _C, _runtime
from .. import autograd as _ag
from .. import _functions as T
from .. import dtypes as _dt

relu = T.relu
sigmoid = T.sigmoid
tanh = T.tanh
silu = T.silu
gelu = T.gelu
softmax = T.softmax
log_softmax = T.log_softmax
one_hot = T.one_hot


def linear(x, weight, bias=None):
    """x (*, in) @ weight.T (in, out) + bias (out,) -> (*, out).

    The backward gives weight's gradient as one matrix product over every row of x, in weight's
    own (out, in) layout: g (N, out)^T @ x (N, in), N the product of x's leading axes (as
    PyTorch's linear). Through matmul's own formula it would be mT of x^T @ g: for a 3-D x a
    batch of small products summed afterwards, and a transposed result that every later reader
    (the optimizer's fused update) reads across rows."""
    with _ag.no_grad():
        y = T.matmul(x, weight.T)
    if _ag.is_grad_enabled() and y.dtype.is_floating_point and (x.requires_grad or weight.requires_grad):
        y.requires_grad = True
        y._node = _ag.Node(_linear_backward, (x, weight), None, _runtime.current_signal())
    return y + bias if bias is not None else y


def _linear_backward(g, y, inputs, attrs):
    x, weight = inputs
    gx = T.matmul(g, weight) if x.requires_grad else None  # (*, out) @ (out, in)
    gw = None
    if weight.requires_grad:
        rows_g = g if g.ndim == 2 else g.reshape(-1, g.shape[-1])
        rows_x = x if x.ndim == 2 else x.reshape(-1, x.shape[-1])
        gw = T.matmul(rows_g.mT, rows_x)  # the .mT is free on a CPU worker: a transposed GEMM operand
    return gx, gw


def embedding(input, weight, padding_idx=None):
    """Rows of `weight` (V, D) for integer `input` (*) -> (*, D). With padding_idx, that row
    gets no gradient (as PyTorch)."""
    out = T.embedding(input, weight)
    if padding_idx is not None:
        keep = T.unsqueeze(T.ne(input if isinstance(input, T.Tensor) else T.tensor(input), padding_idx), -1)
        out = T.where(keep, out, out.detach())
    return out


def leaky_relu(x, negative_slope=0.01):
    return T.where(x > 0, x, x * negative_slope)


def layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last len(normalized_shape) axes
    (biased variance, Ba et al. 2016)."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    normalized_shape = tuple(normalized_shape)
    if x.shape[x.ndim - len(normalized_shape):] != normalized_shape:
        raise _C.ShapeError(f"layer_norm: normalized_shape {list(normalized_shape)} does not match the "
                              f"last axes of input of shape {list(x.shape)}")
    axes = tuple(range(x.ndim - len(normalized_shape), x.ndim))
    mu = T.mean(x, axes, keepdim=True)
    d = x - mu
    var = T.mean(d * d, axes, keepdim=True)
    y = d * T.rsqrt(var + eps)
    if weight is not None:
        y = y * weight
    if bias is not None:
        y = y + bias
    return y


def dropout(x, p=0.5, training=True):
    """Zeroes each element with probability p and scales the rest by 1/(1-p) (Srivastava et al.
    2014); the identity when not training or p == 0."""
    if p < 0 or p > 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return x
    if p == 1:
        return x * 0.0
    keep = T.rand(x.shape, dtype=x.dtype) >= p
    return T.where(keep, x * (1.0 / (1.0 - p)), 0.0)


def _reduce(x, reduction, weight_sum=None):
    if reduction == "mean":
        return T.mean(x) if weight_sum is None else T.sum(x) / weight_sum
    if reduction == "sum":
        return T.sum(x)
    if reduction == "none":
        return x
    raise ValueError(f"reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _class_axis_last(input, target):
    """(N, C, d1, ...) logits -> (N*d1*..., C); target (N, d1, ...) -> (N*d1*...,)."""
    if input.ndim == 1:
        return T.unsqueeze(input, 0), T.reshape(target, 1)
    if input.ndim > 2:
        perm = (0,) + tuple(range(2, input.ndim)) + (1,)
        input = T.reshape(T.permute(input, *perm), -1, input.shape[1])
        target = T.reshape(target, -1)
    return input, target


def nll_loss(input, target, weight=None, ignore_index=-100, reduction="mean"):
    """-input[n, target[n]] (input holds log-probabilities, (N, C) or (N, C, d...)), weighted by
    weight[target[n]]; targets equal to ignore_index count for nothing. 'mean' divides by the
    total weight of the counted targets (as PyTorch)."""
    return _nll(input, target, weight, ignore_index, reduction, 0.0)


def _check_targets(input, target, name):
    if not isinstance(target, T.Tensor):
        target = T.tensor(target)
    if target.dtype.is_floating_point or target.dtype == _dt.bool:
        raise _C.DTypeError(f"{name} expects integer class indices as target, got {target.dtype}")
    expected = input.shape[:1] + input.shape[2:] if input.ndim > 1 else ()
    if target.shape != expected:
        raise _C.ShapeError(f"{name}: target shape {list(target.shape)} does not match input shape "
                              f"{list(input.shape)} (expected {list(expected)})")
    return target


def _nll(logp, target, weight, ignore_index, reduction, label_smoothing):
    out_shape = target.shape
    logp, target = _class_axis_last(logp, target)
    C = logp.shape[-1]
    valid = T.ne(target, ignore_index)
    safe = T.where(valid, target, T.zeros((), dtype=target.dtype))
    picked = T.squeeze(T.gather(logp, 1, T.unsqueeze(safe, 1)), 1)
    w = valid.to(logp.dtype)
    if weight is not None:
        w = w * T.index_select(weight, 0, safe)
    loss = -picked * w
    if label_smoothing:
        # (1 - eps) * nll + eps * mean over classes of -logp (Szegedy et al. 2016)
        cls_w = weight if weight is not None else None
        smooth = -(T.sum(logp * cls_w, 1) if cls_w is not None else T.sum(logp, 1)) / C
        loss = (1.0 - label_smoothing) * loss + label_smoothing * smooth * valid.to(logp.dtype)
    if reduction == "none":
        return T.reshape(loss, out_shape)
    return _reduce(loss, reduction, T.sum(w) if reduction == "mean" else None)


def cross_entropy(input, target, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """Softmax cross-entropy of logits `input` (N, C), (C,) or (N, C, d...) against integer class
    indices `target` (N,) or (N, d...): nll_loss(log_softmax(input, 1), target), with
    ignore_index and label smoothing as PyTorch. Raises gt.DTypeError for float targets and
    gt.ShapeError when the shapes do not fit."""
    target = _check_targets(input, target, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    logp = T.log_softmax(input, dim=1 if input.ndim > 1 else 0)
    return _nll(logp, target, weight, ignore_index, reduction, label_smoothing)


def mse_loss(input, target, reduction="mean"):
    """mean((input - target)^2); reduction 'mean', 'sum' or 'none'."""
    d = input - target
    return _reduce(d * d, reduction)


def l1_loss(input, target, reduction="mean"):
    return _reduce(T.abs(input - target), reduction)


def binary_cross_entropy(input, target, weight=None, reduction="mean"):
    """-(t log p + (1 - t) log(1 - p)) for probabilities p = input; logs clamped at -100 as PyTorch."""
    logp = T.clamp(T.log(input), min=-100.0)
    log1mp = T.clamp(T.log(1.0 - input), min=-100.0)
    loss = -(target * logp + (1.0 - target) * log1mp)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, reduction="mean", pos_weight=None):
    """BCE of sigmoid(input), computed stably: (1 - t) x + (1 + (pw - 1) t) softplus(-x)."""
    sp = T.log1p(T.exp(-T.abs(input))) + T.relu(-input)  # softplus(-x), stable
    if pos_weight is not None:
        loss = (1.0 - target) * input + (1.0 + (pos_weight - 1.0) * target) * sp
    else:
        loss = (1.0 - target) * input + sp
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def softplus(x, beta=1.0):
    return (T.log1p(T.exp(-T.abs(x * beta))) + T.relu(x * beta)) / beta


def scaled_dot_product_attention(q, k, v, attn_mask=None, is_causal=False, scale=None):
    """softmax(q k^T * scale + mask) v for (..., L, E) queries and (..., S, E) keys/values
    (Vaswani et al. 2017); is_causal masks keys after each query."""
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    scores = T.matmul(q, T.transpose(k, -2, -1)) * scale
    L, S = q.shape[-2], k.shape[-2]
    if is_causal:
        import numpy as np
        mask = T.from_numpy(np.tril(np.ones((L, S), dtype=bool)))
        scores = T.masked_fill(scores, T.logical_not(mask), float("-inf"))
    if attn_mask is not None:
        scores = T.masked_fill(scores, T.logical_not(attn_mask), float("-inf")) if attn_mask.dtype == _dt.bool \
            else scores + attn_mask
    return T.matmul(T.softmax(scores, -1), v)
