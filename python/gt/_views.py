"""Layout views that write through, as PyTorch's views share memory: `x.diagonal().add_(eps)`,
`x.view(-1)[::n + 1] += noise`, `x.t().mul_(2)` and `x.unsqueeze(0).zero_()` change x.

GT's tensors do not share memory: a layout method's result is a new tensor, linked here to the
one it was read from (Tensor._view_of with a _tensor._Layout key), so that an in-place write to
it is written back into x (and what x was read from in turn), as basic indexing's views are
(gt._indexing). As there, a view read before x changed is read again when it is written, not
when it is only read. The methods: view, view_as, reshape, reshape_as, flatten, ravel, squeeze,
unsqueeze, unflatten (elements in x's order: written back by a reshape) and transpose,
swapaxes, swapdims, permute, t, T, mT, movedim, moveaxis, diagonal (written back at the flat
positions of x they read); also as the torch functions of those names. GT's own code calls
the unlinked functions (gt._functions), which cost nothing more.
"""
import functools

from . import _complex
from ._tensor import Tensor, _Layout, _ViewOf

SAME_ORDER = ("view", "view_as", "reshape", "reshape_as", "flatten", "ravel", "squeeze", "unsqueeze", "unflatten")
MOVED = ("transpose", "swapaxes", "swapdims", "permute", "t", "movedim", "moveaxis", "diagonal")


def linked(fn, same_order):
    """fn (a layout function of a tensor) returning a view of its input (see the module)."""
    @functools.wraps(fn)
    def view(x, *args, **kwargs):
        y = fn(x, *args, **kwargs)
        if y is not x and type(y) is Tensor and type(x) is not _complex.ComplexTensor:
            y._view_of = _ViewOf(x, _Layout(lambda base: fn(base, *args, **kwargs), same_order))
        return y
    return view


def install(namespace):
    """Replaces the layout methods of Tensor, and the functions of those names in `namespace`
    (the gt module's globals), by linked ones."""
    for names, same_order in ((SAME_ORDER, True), (MOVED, False)):
        for name in names:
            method = getattr(Tensor, name, None)
            if method is not None:
                setattr(Tensor, name, linked(method, same_order))
            if callable(namespace.get(name)):
                namespace[name] = linked(namespace[name], same_order)
    for name in ("T", "mT"):
        prop = getattr(Tensor, name)
        setattr(Tensor, name, property(linked(prop.fget, False), doc=prop.__doc__))
