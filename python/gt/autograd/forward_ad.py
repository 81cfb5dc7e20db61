"""torch.autograd.forward_ad: forward-mode derivatives with dual tensors.

    import gt.autograd.forward_ad as fwAD

    with fwAD.dual_level():
        x = fwAD.make_dual(primal, tangent)   # primal and tangent: tensors of one shape
        y = f(x)
        jvp = fwAD.unpack_dual(y).tangent     # J_f(primal) @ tangent, y's shape

How GT computes it: GT has no per-op forward formulas. A dual tensor is a tensor on the
reverse-mode tape (a fresh leaf that requires grad, or an alias keeping the primal's history),
and `unpack_dual(y)` computes the tangent y carries with two backward passes from y (PyTorch's
"double-backward trick", as gt.func.jvp): with u a zero cotangent of y's shape, g_m = J_m^T u
is recorded for each dual x_m of the level, and the gradient of sum_m <g_m, tangent_m> with
respect to u is sum_m J_m tangent_m. The result is cached while y lives and the level is open.
A custom autograd.Function with a `jvp` staticmethod, applied to tensors that carry tangents,
gets its output's tangent from `jvp(ctx, *input_tangents)` instead: that output is a dual of the
level (a leaf: a backward pass through it does not reach the inputs).

Differences from PyTorch: a dual tensor, and what is computed from it, has requires_grad True;
each unpack_dual of a computed tensor costs two backward passes; levels nest (the innermost is
the default) but a tangent is only seen at the level it was made at.

Errors: make_dual outside a level, with a tangent of another shape, or of a non-floating
tensor raises RuntimeError, as PyTorch does.
"""
import collections
import contextlib
import weakref

__all__ = ["dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual", "UnpackedDualTensor"]

UnpackedDualTensor = collections.namedtuple("UnpackedDualTensor", ["primal", "tangent"])


class _Level:
    __slots__ = ("duals", "cache")

    def __init__(self):
        self.duals = {}  # id(dual) -> (dual, primal, tangent): held until the level exits
        self.cache = {}  # id(tensor) -> (weak reference, tangent): tangents already computed


_levels = []


def enter_dual_level():
    """Opens a new forward-AD level and returns its index (torch.autograd.forward_ad)."""
    _levels.append(_Level())
    return len(_levels) - 1


def exit_dual_level(*, level=None):
    """Closes the innermost level (`level`, if given, must be it): its tangents are dropped."""
    if not _levels:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. "
                           "This is not supported.")
    if level is not None and level != len(_levels) - 1:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that was created. "
                           "This is not supported.")
    _levels.pop()


class dual_level(contextlib.ContextDecorator):
    """Context manager for a forward-AD level: tangents made inside are dropped on exit."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


def _level(level):
    if not _levels:
        return None
    if level is None:
        return _levels[-1]
    if not 0 <= level < len(_levels):
        raise RuntimeError(f"Trying to use forward AD level {level}, which does not exist")
    return _levels[level]


def make_dual(tensor, tangent, *, level=None):
    """A tensor with tensor's values that carries `tangent` (same shape) as its forward
    gradient at the current level. Raises RuntimeError outside a dual_level, for a tangent of
    another shape, and for a tensor that is not floating point."""
    from .._tensor import Tensor
    from . import no_grad
    lv = _level(level)
    if lv is None:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, make sure to "
                           "enter_dual_level() first.")
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError("make_dual: expected tensor and tangent to be Tensors")
    if not tensor.dtype.is_floating_point:
        raise RuntimeError(f"Expected primal to be floating point, got {tensor.dtype}")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than that of the original "
                           f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the given "
                           f"forward gradient is of size {list(tangent.shape)}.")
    if tensor.requires_grad:
        dual = tensor.view_as(tensor)  # keeps the primal's history for backward passes
    else:
        with no_grad():
            dual = tensor.detach()
        dual.requires_grad_(True)
    lv.duals[id(dual)] = (dual, tensor, tangent)
    return dual


def unpack_dual(tensor, *, level=None):
    """(primal, tangent) of `tensor` at the level: its tangent as a dual made by make_dual (the
    very tensor given), or the tangent it carries as a function of the level's duals (see the
    module's docstring), or None when it depends on none of them or no level is open."""
    from .._tensor import Tensor, zeros
    from . import enable_grad, grad
    lv = _level(level)
    if lv is None or not isinstance(tensor, Tensor):
        return UnpackedDualTensor(tensor, None)
    entry = lv.duals.get(id(tensor))
    if entry is not None and entry[0] is tensor:
        return UnpackedDualTensor(entry[1], entry[2])
    cached = lv.cache.get(id(tensor))
    if cached is not None and cached[0]() is tensor:
        return UnpackedDualTensor(tensor, cached[1])
    tangent = _tangent(tensor, lv, Tensor, zeros, enable_grad, grad)
    lv.cache[id(tensor)] = (weakref.ref(tensor), tangent)
    return UnpackedDualTensor(tensor, tangent)


def _tangent(y, lv, Tensor, zeros, enable_grad, grad):
    if not y.requires_grad or not y.dtype.is_floating_point or not lv.duals:
        return None
    duals = [(d, t) for d, _, t in lv.duals.values()]
    with enable_grad():
        u = zeros(y.shape, dtype=y.dtype).requires_grad_(True)
        gs = grad([y], [d for d, _ in duals], [u], retain_graph=True, create_graph=True, allow_unused=True)
        pairs = [(g, t) for g, (_, t) in zip(gs, duals) if g is not None]
        if not pairs:
            return None
        recorded = [(g, t.to(g.dtype)) for g, t in pairs if g.requires_grad]
        if not recorded:
            return zeros(y.shape, dtype=y.dtype)
        (jv,) = grad([g for g, _ in recorded], [u], [t for _, t in recorded], allow_unused=True)
    return zeros(y.shape, dtype=y.dtype) if jv is None else jv.detach()


def _function_jvp(cls, ctx, args, out):
    """For Function.apply: when cls defines jvp and an argument carries a tangent at the
    innermost level, out as a dual whose tangent is cls.jvp(ctx, *tangents); else None."""
    from .._tensor import Tensor, zeros
    if not _levels or getattr(cls, "jvp", None) is None or not _defines_jvp(cls):
        return None
    tangents = [unpack_dual(a).tangent if isinstance(a, Tensor) else None for a in args]
    if all(t is None for t in tangents):
        return None
    tangents = [zeros(a.shape, dtype=a.dtype) if t is None and isinstance(a, Tensor) and ctx._materialize else t
                for a, t in zip(args, tangents)]
    result = cls.jvp(ctx, *tangents)
    single = not isinstance(out, tuple)
    outs, tans = ([out], [result]) if single else (list(out), list(result if isinstance(result, tuple) else (result,)))
    duals = [make_dual(o, t) if isinstance(o, Tensor) and isinstance(t, Tensor) else o for o, t in zip(outs, tans)]
    return duals[0] if single else tuple(duals)


def _defines_jvp(cls):
    from . import Function
    return any("jvp" in vars(k) for k in cls.__mro__ if k is not Function and k is not object)
