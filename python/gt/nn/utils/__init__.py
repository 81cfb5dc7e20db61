"""gt.nn.utils: gradient clipping (torch.nn.utils); gt.nn.utils.rnn: padding and packing
variable-length sequences."""
from ... import _functions as T
from ...autograd import no_grad
from . import rnn  # noqa: F401 (torch.nn.utils.rnn)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0):
    """Scales every gradient by min(1, max_norm / (total_norm + 1e-6)), where total_norm is the
    norm of all gradients together; returns total_norm (a 0-d tensor; nothing waits for it)."""
    if isinstance(parameters, T.Tensor):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    if not grads:
        return T.zeros(())
    with no_grad():
        if norm_type == float("inf"):
            total = grads[0].abs().amax()
            for g in grads[1:]:
                total = T.maximum(total, g.abs().amax())
        else:
            total = None
            for g in grads:
                s = T.sum(T.pow(T.abs(g.float()), norm_type))
                total = s if total is None else total + s
            total = T.pow(total, 1.0 / norm_type)
        coef = T.clamp(max_norm / (total + 1e-6), max=1.0)
        for p in parameters:
            if p.grad is not None:
                p.grad = p.grad * T.cast(coef, p.grad.dtype)
    return total


def clip_grad_value_(parameters, clip_value):
    """Clamps every gradient to [-clip_value, clip_value] elementwise, as torch.nn.utils."""
    if isinstance(parameters, T.Tensor):
        parameters = [parameters]
    with no_grad():
        for p in parameters:
            if p.grad is not None:
                p.grad = T.clamp(p.grad, -clip_value, clip_value)
