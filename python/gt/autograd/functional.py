"""torch.autograd.functional: derivatives of whole functions, built on gt.autograd.grad.

Each function takes `func` (tensors in, a tensor or a tuple of tensors out) and `inputs` (a
tensor or a tuple of tensors) and differentiates func at inputs, as PyTorch's do:

- vjp(func, inputs, v)      -> (func(inputs), v^T J)            one backward pass
- jvp(func, inputs, v)      -> (func(inputs), J v)              two (the "double-backward
                               trick" PyTorch's jvp uses: J v = d/du <J^T u, v> for any u)
- jacobian(func, inputs)    -> J, shaped output.shape + input.shape, one backward pass per
                               output element (reverse mode)
- hessian(func, inputs)     -> the Jacobian of the gradient (func returns one element)
- vhp / hvp(func, inputs, v)-> (func(inputs), v^T H) / (func(inputs), H v)

Nesting follows PyTorch: a tuple of inputs gives a tuple of results per input; a tuple of
outputs a tuple per output (jacobian: result[i][j] = d output i / d input j). The inputs are
differentiated as fresh leaves: what they require is not changed. create_graph=True records
the derivative's ops, so the result can be differentiated again (and keeps the inputs'
history when they require grad); otherwise results are detached. strict=True raises
RuntimeError when an output does not depend on an input (else its derivative is zeros).
`vectorize` and `strategy` are accepted for PyTorch's signatures: GT always runs reverse mode,
one backward pass per row of the Jacobian, which gives the same values.

Second derivatives (hessian, hvp, vhp, jvp's second pass) need every op of func to have a
differentiable backward formula; an op without one raises RuntimeError naming it.
"""
from .. import _tensor
from . import enable_grad, grad as _grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


def _stack(tensors):
    from .._functions import stack  # (not at import: gt._functions imports gt.autograd)
    return stack(tensors)


def _as_tuple(x, what, fn_name):
    single = isinstance(x, _tensor.Tensor)
    items = (x,) if single else tuple(x) if isinstance(x, (tuple, list)) else None
    if items is None or not all(isinstance(t, _tensor.Tensor) for t in items):
        raise TypeError(f"The {what} given to {fn_name} must be either a Tensor or a tuple of Tensors but "
                        f"the value got is {type(x).__name__ if items is None else 'a tuple holding non-Tensors'}.")
    return single, items


def _leaves(inputs, create_graph):
    # create_graph keeps the caller's history (an alias of each input that requires grad), so
    # the result can be differentiated with respect to the caller's tensors; otherwise fresh leaves.
    return tuple(t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(True)
                 for t in inputs)


def _grads(outputs, inputs, grad_outputs, create_graph, strict, fn_name, wrt="input"):
    """d(outputs . grad_outputs)/d(inputs), zeros (or RuntimeError with strict) where an output
    does not depend on an input."""
    live = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if live:
        grads = _grad([o for o, _ in live], inputs, [g for _, g in live], retain_graph=True,
                      create_graph=create_graph, allow_unused=True)
    else:
        grads = (None,) * len(inputs)
    result = []
    for i, (g, t) in enumerate(zip(grads, inputs)):
        if g is None:
            if strict:
                raise RuntimeError(f"The output of the user-provided function is independent of {wrt} {i}. "
                                   f"This is not allowed in strict mode ({fn_name}).")
            g = _tensor.zeros(t.shape, dtype=t.dtype)
        result.append(g if create_graph else g.detach())
    return tuple(result)


def _check_v(v, like, fn_name, what):
    single, vs = _as_tuple(v, "v", fn_name)
    if len(vs) != len(like):
        raise RuntimeError(f"v is a tuple of invalid length: should be {len(like)} but got {len(vs)}.")
    for i, (a, b) in enumerate(zip(vs, like)):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"Entry {i} in v has invalid size: should be {tuple(b.shape)} but got "
                               f"{tuple(a.shape)} ({fn_name}: v has the {what}'s shapes).")
    return vs


def _outputs(func, inputs, fn_name):
    out = func(*inputs)
    single, outs = _as_tuple(out, "outputs of the user-provided function", fn_name)
    return single, outs


def _finish(single, items, create_graph):
    items = tuple(t if create_graph else t.detach() for t in items)
    return items[0] if single else items


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): v has the outputs' shapes (may be None for a single 1-element
    output). Raises RuntimeError for a v of the wrong length or shapes."""
    single_in, inputs = _as_tuple(inputs, "inputs", "vjp")
    with enable_grad():
        leaves = _leaves(inputs, create_graph)
        single_out, outs = _outputs(func, leaves, "vjp")
        if v is None:
            if len(outs) != 1 or outs[0].numel() != 1:
                raise RuntimeError("The vector v can only be None if the user-provided function returns a "
                                   "single Tensor with a single element.")
            vs = (_tensor.ones(outs[0].shape, dtype=outs[0].dtype),)
        else:
            vs = _check_v(v, outs, "vjp", "outputs")
        grads = _grads(outs, leaves, vs, create_graph, strict, "vjp")
    return _finish(single_out, outs, create_graph), (grads[0] if single_in else grads)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): v has the inputs' shapes (may be None for a single 1-element
    input). Computed with two backward passes: u -> J^T u is linear, and the gradient of
    <J^T u, v> with respect to u is J v."""
    single_in, inputs = _as_tuple(inputs, "inputs", "jvp")
    if v is None:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                               "single Tensor with a single element.")
        v = (_tensor.ones(inputs[0].shape, dtype=inputs[0].dtype),)
    vs = _check_v(v, inputs, "jvp", "inputs")
    with enable_grad():
        leaves = _leaves(inputs, create_graph)
        single_out, outs = _outputs(func, leaves, "jvp")
        us = tuple(_tensor.zeros(o.shape, dtype=o.dtype).requires_grad_(True) for o in outs)
        live = [(o, u) for o, u in zip(outs, us) if o.requires_grad]
        if live:
            vjps = _grad([o for o, _ in live], leaves, [u for _, u in live], retain_graph=True, create_graph=True,
                         allow_unused=True)
        else:
            vjps = (None,) * len(leaves)
        for i, g in enumerate(vjps):
            if g is None and strict:
                raise RuntimeError(f"The output of the user-provided function is independent of input {i}. "
                                   "This is not allowed in strict mode (jvp).")
        pairs = [(g, vi) for g, vi in zip(vjps, vs) if g is not None and g.requires_grad]
        if pairs:
            result = _grads([g for g, _ in pairs], us, [vi for _, vi in pairs], create_graph, strict, "jvp",
                            wrt="output")
        else:
            result = tuple(_tensor.zeros(o.shape, dtype=o.dtype) for o in outs)
    return _finish(single_out, outs, create_graph), (result[0] if single_out else result)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """The Jacobian of func at inputs: for output i and input j a tensor shaped
    output_i.shape + input_j.shape; a tensor for one input and one output, a tuple over the
    inputs for one output (or over the outputs for one input), else a tuple of tuples.
    strategy="reverse-mode" takes one backward pass per output element, "forward-mode" one per
    input element (gt.func.jacfwd's columns; with strict, rows)."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
                         'function has more outputs than inputs, "forward-mode" tends to be more performant. '
                         'Otherwise, prefer to use "reverse-mode".')
    single_in, inputs = _as_tuple(inputs, "inputs", "jacobian")
    with enable_grad():
        leaves = _leaves(inputs, create_graph)
        single_out, outs = _outputs(func, leaves, "jacobian")
        jac = None
        if strategy == "forward-mode" and not strict:
            from ..func import _columns
            try:  # one backward pass per input element (gt.func.jacfwd)
                jac = [tuple(row) for row in _columns(outs, leaves, create_graph)]
            except RuntimeError:
                pass  # a gradient op without a derivative of its own: rows, below
    if jac is None:
        jac = _jacobian_rows(outs, leaves, create_graph, strict)
    if single_out:
        return jac[0][0] if single_in else jac[0]
    return tuple(j[0] for j in jac) if single_in else tuple(jac)


def _jacobian_rows(outs, leaves, create_graph, strict):
    """jacobian's blocks with one backward pass per output element."""
    with enable_grad():
        jac = []
        for o in outs:
            n = o.numel()
            rows = [[] for _ in leaves]
            for k in range(n):
                seed = _tensor.zeros(n, dtype=o.dtype)
                seed[k] = 1.0
                gs = _grads((o,), leaves, (seed.reshape(o.shape),), create_graph, strict, "jacobian")
                for j, g in enumerate(gs):
                    rows[j].append(g)
            per_input = []
            for j, t in enumerate(leaves):
                stacked = (_stack(rows[j]) if rows[j] else _tensor.zeros((0,) + tuple(t.shape), dtype=t.dtype))
                per_input.append(stacked.reshape(tuple(o.shape) + tuple(t.shape)))
            jac.append(tuple(per_input))
    return jac


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """The Hessian of func (one output element) at inputs: shaped input.shape + input.shape for
    one input, else result[i][j] = d2 f / d input_i d input_j. Raises RuntimeError when func
    returns more than one element."""
    single_in, inputs = _as_tuple(inputs, "inputs", "hessian")

    def gradient(*xs):
        out = func(*xs)
        single_out, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor with a single element")
        return _grads(outs, xs, (_tensor.ones(outs[0].shape, dtype=outs[0].dtype),), True, strict, "hessian")

    h = jacobian(gradient, inputs, create_graph=create_graph, strict=strict, strategy=outer_jacobian_strategy)
    return h[0][0] if single_in else h


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H) for func returning one element; v has the inputs' shapes."""
    return _hessian_product(func, inputs, v, create_graph, strict, "vhp")


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v) for func returning one element (the same as vhp: H is symmetric
    wherever the second derivatives are continuous, and computed the same way here)."""
    return _hessian_product(func, inputs, v, create_graph, strict, "hvp")


def _hessian_product(func, inputs, v, create_graph, strict, fn_name):
    single_in, inputs = _as_tuple(inputs, "inputs", fn_name)
    if v is None:
        if len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided function is a "
                               "single Tensor with a single element.")
        v = (_tensor.ones(inputs[0].shape, dtype=inputs[0].dtype),)
    vs = _check_v(v, inputs, fn_name, "inputs")
    with enable_grad():
        leaves = _leaves(inputs, create_graph)
        single_out, outs = _outputs(func, leaves, fn_name)
        if len(outs) != 1 or outs[0].numel() != 1:
            raise RuntimeError(f"The function given to {fn_name} should return a single Tensor with a single element")
        gs = _grads(outs, leaves, (_tensor.ones(outs[0].shape, dtype=outs[0].dtype),), True, strict, fn_name)
        pairs = [(g, vi) for g, vi in zip(gs, vs) if g.requires_grad]
        if pairs:
            result = _grads([g for g, _ in pairs], leaves, [vi for _, vi in pairs], create_graph, strict, fn_name)
        else:
            if strict:
                raise RuntimeError(f"The output of the user-provided function is independent of input 0. "
                                   f"This is not allowed in strict mode ({fn_name}).")
            result = tuple(_tensor.zeros(t.shape, dtype=t.dtype) for t in leaves)
    return _finish(single_out, outs, create_graph), (result[0] if single_in else result)
