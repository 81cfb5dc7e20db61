"""Layout views that write through, as PyTorch's views share memory: `x.diagonal().add_(eps)`,
`x.view(-1)[::n + 1] += noise`, `x.t().mul_(2)` and `x.unsqueeze(0).zero_()` change x.

GT's tensors do not share memory: a layout method's result is a new tensor, linked here to the
one it was read from (Tensor._view_of with a _tensor._Layout key), so that an in-place write to
it is written back into x (and what x was read from in turn), as basic indexing's views are
(gt._indexing). As there, a view read before x changed is read again when it is written, not
when it is only read. A view of a view is linked to the first one's base (its reads composed),
up to 32 deep: the 33rd view of a chain (a loop reshaping one variable) is not linked.

The methods: view, view_as, reshape, reshape_as, flatten, ravel, squeeze, unsqueeze, unflatten (elements in x's order: written back by a reshape) and transpose,
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
        if y is not x and type(y) is Tensor and type(x) is not _complex.ComplexTensor and \
                getattr(y, "_view_of", None) is None:  # (x.view(dtype) links its own)
            y._view_of = _link(x, lambda base: fn(base, *args, **kwargs), same_order)
        return y
    return view


def _link(x, read, same_order):
    """The _ViewOf of read(x). A view of a view is linked to what that one was read from, its
    read composed (as PyTorch's view of a view has the first one's base): `q.view(...).transpose
    (1, 2)` holds no intermediate tensor, and writing it writes the base directly."""
    up = getattr(x, "_view_of", None)
    root = up.base() if up is not None else None
    if root is None or root.shape != up.base_shape:
        return _ViewOf(x, _Layout(read, same_order))
    key = up.key
    if type(key) is _Layout and key.writer is not None:  # (x.view(dtype).view(...): linked to the first view,
        return _ViewOf(x, _Layout(read, same_order))  # which writes its bytes back itself)
    if type(key) is _Layout:
        depth = getattr(key.fn, "_depth", 1) + 1
        if depth > _MAX_DEPTH:
            return None  # (a chain this long is a loop reshaping one variable: its last view stands alone)
        composed = lambda base: read(key.read(base))  # noqa: E731
        composed._depth = depth
        return _ViewOf(root, _Layout(composed, key.same_order and same_order))
    return _ViewOf(root, _Layout(lambda base: read(base[key]), False))


_MAX_DEPTH = 32  # layout views of layout views linked to one base, at most


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
