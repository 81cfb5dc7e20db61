"""torch.autograd.gradcheck / gradgradcheck: the gradients autograd computes against central
finite differences, element by element (as PyTorch's slow mode; use float64 inputs).

    x = gt.randn(3, dtype=gt.float64, requires_grad=True)
    assert gt.autograd.gradcheck(MyFunction.apply, (x,))

The analytical Jacobian takes one backward pass per output element (with check_forward_ad, also
one forward-AD tangent per input element) and the numerical one two calls of `func` per input
element, so keep the inputs small.
"""
import numpy as np


class GradcheckError(RuntimeError):
    """A gradient that does not match its finite-difference estimate (torch.autograd.GradcheckError)."""


def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _outputs(func, inputs):
    from .._tensor import Tensor
    return tuple(o for o in _as_tuple(func(*inputs)) if isinstance(o, Tensor))


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """Whether the gradients of `func(*inputs)` (tensors, or a tuple of them) with respect to each
    input tensor that requires grad match central differences with step `eps`:
    |analytical - numerical| <= atol + rtol * |numerical| for every Jacobian entry. Raises
    GradcheckError naming the output and input (or returns False with raise_exception=False).
    check_backward_ad checks the backward pass's gradients, check_forward_ad the tangents of
    gt.autograd.forward_ad (a custom Function's jvp). The other keyword arguments are accepted
    as PyTorch's and change nothing."""
    from .. import _functions as T
    from . import grad
    from .._tensor import Tensor
    inputs = _as_tuple(inputs)
    wrt = [i for i, t in enumerate(inputs) if isinstance(t, Tensor) and t.requires_grad]
    if not wrt:
        raise ValueError("gradcheck expects at least one input tensor to require gradient")
    outputs = _outputs(func, inputs)
    for k, out in enumerate(outputs):
        if not out.dtype.is_floating_point:
            continue
        n_out = out.numel()
        for i in wrt:
            x = inputs[i]
            base = x.detach().numpy().astype(np.float64)
            numerical = np.zeros((base.size, n_out))
            for j in range(base.size):  # central differences, one input element at a time
                cols = []
                for sign in (1, -1):
                    moved = base.copy().reshape(-1)
                    moved[j] += sign * eps
                    args = list(inputs)
                    # (requiring grad as x does: func may differentiate inside, as gradgradcheck's)
                    args[i] = T.tensor(moved.reshape(base.shape), dtype=x.dtype, requires_grad=True)
                    cols.append(_outputs(func, args)[k].detach().numpy().astype(np.float64).reshape(-1))
                numerical[j] = (cols[0] - cols[1]) / (2 * eps)
            checks = []
            if check_backward_ad:
                analytical = np.zeros((base.size, n_out))
                for m in range(n_out):  # one backward pass per output element
                    seed = np.zeros(n_out)
                    seed[m] = 1.0
                    out_again = _outputs(func, inputs)[k]
                    g, = grad(out_again, [x], T.tensor(seed.reshape(out.shape), dtype=out.dtype), allow_unused=True)
                    if g is not None:
                        analytical[:, m] = g.numpy().astype(np.float64).reshape(-1)
                checks.append(("", analytical))
            if check_forward_ad:
                checks.append((" (forward AD)", _forward_jacobian(func, inputs, k, i, n_out)))
            for what, analytical in checks:
                if not np.all(np.abs(analytical - numerical) <= atol + rtol * np.abs(numerical)):
                    if not raise_exception:
                        return False
                    raise GradcheckError(f"Jacobian mismatch for output {k} with respect to input {i}{what},\n"
                                         f"numerical:{numerical}\nanalytical:{analytical}\n")
    return True


def _forward_jacobian(func, inputs, k, i, n_out):
    """d output k / d input i, one input element at a time, from the tangents forward AD gives
    (gt.autograd.forward_ad; rows: input elements)."""
    from .. import _functions as T
    from . import forward_ad
    x = inputs[i]
    jac = np.zeros((x.numel(), n_out))
    for j in range(x.numel()):
        e = np.zeros(x.numel())
        e[j] = 1.0
        with forward_ad.dual_level():
            args = list(inputs)
            args[i] = forward_ad.make_dual(x.detach(), T.tensor(e.reshape(x.shape), dtype=x.dtype))
            tangent = forward_ad.unpack_dual(_outputs(func, args)[k]).tangent
        if tangent is not None:
            jac[j] = tangent.numpy().astype(np.float64).reshape(-1)
    return jac


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3, gen_non_contig_grad_outputs=False,
                  raise_exception=True, nondet_tol=0.0, check_undefined_grad=True, check_grad_dtypes=False,
                  check_batched_grad=False, check_fwd_over_rev=False, check_rev_over_rev=True, fast_mode=False,
                  masked=False):
    """gradcheck of the first derivatives (computed with create_graph) with respect to the inputs
    and `grad_outputs` (random float64 ones of each output's shape when None): checks second
    derivatives, as torch.autograd.gradgradcheck."""
    from .. import _functions as T
    from . import grad
    from .._tensor import Tensor
    inputs = _as_tuple(inputs)
    outputs = _outputs(func, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(T.tensor(rng.standard_normal(o.shape), dtype=o.dtype, requires_grad=True)
                             for o in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    wrt = [t for t in inputs if isinstance(t, Tensor) and t.requires_grad]
    n = len(inputs)

    def first_derivatives(*args):
        ins, gos = args[:n], args[n:]
        outs = _outputs(func, ins)
        diff = [t for t in ins if isinstance(t, Tensor) and t.requires_grad]
        grads = grad(outs, diff, gos, create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)
    return gradcheck(first_derivatives, tuple(inputs) + tuple(grad_outputs), eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception) if wrt else True
