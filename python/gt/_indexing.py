"""Tensor indexing with PyTorch's (NumPy's) rules: `x[key]` and `x[key] = value`.

Basic indexing (ints, slices with positive steps, `...`, `None`) becomes one gt.slice and a
reshape; advanced indexing (integer arrays or tensors, bool masks) becomes one
gt.index_select over the advanced axes merged into one. Gradients flow through both.

A bool mask that is a Tensor is turned into positions on the client, so it waits for the
mask's values (as PyTorch's nonzero() does on a GPU). Index values the client knows (lists,
NumPy arrays) are checked here and raise IndexError at the user's line; out-of-range values in
an index Tensor are clamped on the worker.
"""
import builtins
import math
import weakref

import numpy as np

from . import _functions as T
from . import dtypes as _dt
from ._tensor import _HOLD_BYTES, _link_view, warn_at_user_line as _warn_at_user_line
from .autograd import is_grad_enabled, no_grad


def _scalar_bool(k):
    """Whether index k is a Python/NumPy bool or a 0-d bool tensor: like None, a new axis, of
    size 1 for True and 0 for False (PyTorch's and NumPy's rule: x[True], x[mask] of a 0-d x)."""
    return isinstance(k, (bool, np.bool_)) or (isinstance(k, T.Tensor) and k.ndim == 0 and k.dtype == _dt.bool)


def _dims_used(k):
    if k is None or k is Ellipsis or _scalar_bool(k):
        return 0
    if isinstance(k, T.Tensor) and k.dtype == _dt.bool:
        return builtins.max(k.ndim, 1)
    if isinstance(k, (np.ndarray, list)) and np.asarray(k).dtype == np.bool_:
        return builtins.max(np.asarray(k).ndim, 1)
    return 1


def _sequence_as_tuple(key):
    """PyTorch's (and old NumPy's) rule for a list index: one shorter than 32 holding a sequence,
    a tensor, a slice, None or '...' is read as a tuple of indices (x[[rows, cols]] is
    x[rows, cols]), with PyTorch's deprecation warning."""
    if type(key) is not list or len(key) >= 32:
        return False
    if not any(isinstance(k, (list, tuple, range, T.Tensor, np.ndarray, slice)) or k is None or k is Ellipsis
               for k in key):
        return False
    from ._tensor import warn_at_user_line
    warn_at_user_line("Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed "
                      "in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted "
                      "as tensor index, x[torch.tensor(seq)], which will result either in an error or a different "
                      "result")
    return True


def _normalize_key(x, key):
    if _sequence_as_tuple(key):
        key = tuple(key)
    if not isinstance(key, tuple):
        key = (key,)
    if any(isinstance(k, T.Tensor) and k.dtype == _dt.uint8 for k in key):  # a mask, as PyTorch's (deprecated there)
        _warn_at_user_line("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.")
        key = tuple(k != 0 if isinstance(k, T.Tensor) and k.dtype == _dt.uint8 else k for k in key)
    if builtins.sum(k is Ellipsis for k in key) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = builtins.sum(_dims_used(k) for k in key)
    if used > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    out = []
    for k in key:
        if isinstance(k, (range, tuple)):
            k = list(k)  # a sequence of ints, as PyTorch takes it (x[(0, 1), (0, 1)]: two index arrays)
        if k is Ellipsis:
            out.extend([slice(None)] * (x.ndim - used))
        else:
            out.append(k)
    if not any(k is Ellipsis for k in key):
        out.extend([slice(None)] * (x.ndim - used))
    return out


def _basic(x, key, values=True):
    """Applies ints, slices and None; returns (tensor, advanced [(axis, index)], window) where
    window = (starts, steps, sizes) over x's axes and advanced axes refer to the result. With
    values=False nothing is recorded and the first item is the result's shape."""
    starts, steps, sizes = [0] * x.ndim, [1] * x.ndim, list(x.shape)
    out_shape, advanced, empty = [], [], []
    d = 0
    for k in key:
        if k is None:
            out_shape.append(1)
            continue
        if _scalar_bool(k):  # a new axis, emptied for False (a 0-d tensor's value is read: a wait)
            if not bool(k):
                empty.append(len(out_shape))
            out_shape.append(1)
            continue
        if isinstance(k, (int, np.integer)):
            n = x.shape[d]
            i = int(k)
            if i < -n or i >= n:
                raise IndexError(f"index {i} is out of bounds for dimension {d} with size {n}")
            starts[d], sizes[d] = i % n, 1
            d += 1
            continue
        if isinstance(k, slice):
            n = x.shape[d]
            if k.step is not None and k.step <= 0:
                raise ValueError("step must be greater than zero")
            start, stop, step = k.indices(n)
            size = len(range(start, stop, step))
            starts[d], steps[d], sizes[d] = (start if size else builtins.min(start, n)), step, size
            out_shape.append(size)
            d += 1
            continue
        if isinstance(k, (T.Tensor, np.ndarray, list, tuple)):
            arr = k if isinstance(k, T.Tensor) else np.asarray(k)
            if arr.dtype in (_dt.bool, np.bool_):
                m = builtins.max(arr.ndim, 1)
                if tuple(arr.shape) != x.shape[d:d + m] and arr.ndim:
                    raise IndexError(f"the shape of the mask {tuple(arr.shape)} does not match the shape "
                                     f"{x.shape[d:d + m]} of the indexed tensor at dimension {d}")
                advanced.append((len(out_shape), "mask", arr, x.shape[d:d + m]))
                out_shape.extend(x.shape[d:d + m])
                d += m
            else:
                advanced.append((len(out_shape), "index", arr, x.shape[d]))
                out_shape.append(x.shape[d])
                d += 1
            continue
        raise IndexError(f"only integers, slices, ellipsis, None, integer or bool tensors are valid "
                         f"indices, got {type(k).__name__}")
    if not values:
        return tuple(0 if i in empty else n for i, n in enumerate(out_shape)), advanced, (starts, steps, sizes)
    y = T.reshape(T._slice(x, starts, steps, sizes), tuple(out_shape))
    for axis in empty:
        y = T.narrow(y, axis, 0, 0)
    return y, advanced, (starts, steps, sizes)


def _mask_positions(mask, shape):
    """A bool mask over `shape` -> one int64 array of positions per masked axis."""
    m = mask.numpy() if isinstance(mask, T.Tensor) else np.asarray(mask)
    if m.ndim == 0:
        raise IndexError("a 0-d bool mask is not supported")
    return list(np.nonzero(m))


def _advanced(y, advanced):
    """y indexed by advanced index arrays at result axes; NumPy's placement rules."""
    axes, arrays = [], []
    for pos, kind, arr, size in advanced:
        if kind == "mask":
            positions = _mask_positions(arr, size)
            for j, p in enumerate(positions):
                axes.append(pos + j)
                arrays.append(p)
        else:
            axes.append(pos)
            arrays.append(arr)
    sizes = [y.shape[a] for a in axes]
    known = [a if isinstance(a, T.Tensor) else np.asarray(a) for a in arrays]
    for a, n in zip(known, sizes):
        if not isinstance(a, T.Tensor):
            if a.dtype.kind not in "iu" and a.size:
                raise IndexError(f"tensors used as indices must be long, int or bool, got {a.dtype}")
            if a.size and (a.max() >= n or a.min() < -n):
                bad = a[(a >= n) | (a < -n)][0]
                raise IndexError(f"index {bad} is out of bounds for dimension with size {n}")
        elif a.dtype not in (_dt.int64, _dt.int32):
            raise IndexError(f"tensors used as indices must be long, int or bool, got {a.dtype}")
    consecutive = axes == list(range(axes[0], axes[0] + len(axes)))
    place = axes[0] if consecutive else 0
    rest = [i for i in range(y.ndim) if i not in axes]
    order = rest[:place] + axes + rest[place:]
    y = T.permute(y, *order)
    before, after = y.shape[:place], y.shape[place + len(axes):]
    y = T.reshape(y, before + (math.prod(sizes),) + after)
    index, bshape = _flat_index(known, sizes)
    out = T.index_select(y, place, index)
    return T.reshape(out, before + tuple(bshape) + after)


def _flat_index(indices, sizes):
    """One 1-D int64 index over axes of `sizes` merged (row-major) from one index per axis
    (lists or arrays the client checked, or Tensors), broadcast together; and their broadcast
    shape. Negative indices count from the end. A Tensor's out-of-range value fails on the
    worker, naming the axis size (merged, it would silently select another row)."""
    if all(not isinstance(a, T.Tensor) for a in indices):
        b = np.broadcast_arrays(*[np.asarray(a, dtype=np.int64) for a in indices])
        flat = np.zeros(b[0].shape, dtype=np.int64)
        for a, n in zip(b, sizes):
            flat = flat * n + np.where(a < 0, a + n, a)
        return T.from_numpy(flat.reshape(-1)), flat.shape
    ts = [a if isinstance(a, T.Tensor) else T.from_numpy(np.asarray(a, dtype=np.int64)) for a in indices]
    ts = T.broadcast_tensors(*[T.cast(t, _dt.int64) for t in ts])
    flat = None
    for a, t, n in zip(indices, ts, sizes):
        t = T.where(t < 0, t + n, t)
        if isinstance(a, T.Tensor) and len(sizes) > 1:  # checked: index_select of 0..n-1 at t is t, or fails
            t = T.reshape(T.index_select(T.arange(n, dtype=_dt.int64), 0, T.reshape(t, -1)), t.shape)
        flat = t if flat is None else flat * n + t
    return T.reshape(flat, -1), flat.shape


@T._method("__getitem__")
def getitem(x, key):
    ints = (key,) if type(key) is int else key if type(key) is tuple and all(type(k) is int for k in key) else None
    nkey = _normalize_key(x, key)
    y, advanced, _ = _basic(x, nkey)
    if advanced:
        return _advanced(y, advanced)  # a copy, as in PyTorch
    if ints is not None and y is not x and y._host is None and len(ints) <= x.ndim and \
            math.prod(x.shape) * _dt.numpy_dtype(x.dtype).itemsize <= _HOLD_BYTES:
        y._host = (y._h, weakref.ref(x), x._h, ints)  # its values: x's at `ints` (Tensor._host)
    return _link_view(y, x, key)  # a view: writing to it writes to x (Tensor._rebind)


def _same_key(a, b):
    """Whether two keys of ints, slices, None and '...' are equal (False for any other key)."""
    if a is b:
        return True
    a, b = (a if type(a) is tuple else (a,)), (b if type(b) is tuple else (b,))
    return len(a) == len(b) and all(type(p) is type(q) and type(p) in (int, slice, type(None), type(Ellipsis)) and p == q
                                    for p, q in zip(a, b))


@T._method("__setitem__")
def setitem(x, key, value):
    """x[key] = value: rebinds x to the updated values (and, if x is a view, writes them back
    into what it was read from). On a tensor that requires grad: raises for a leaf unless
    grad mode is off (PyTorch's rule); a non-leaf records the write in its history, and so does
    a tensor written with a value that requires grad."""
    view = getattr(value, "_view_of", None)
    if view is not None and view.written is value._h and view.version == x._version and view.base() is x and \
            _same_key(view.key, key):
        return  # x[i, j] += 1: the view x[i, j] wrote its new values into x already (Tensor._rebind)
    grad = x.requires_grad and is_grad_enabled()
    if grad and x.is_leaf:
        raise RuntimeError("a leaf Variable that requires grad is being used in an in-place operation "
                           "(x[key] = value: wrap it in `with gt.no_grad():`)")
    before = x._before()  # x's values now (read again if x is a stale view), its history
    v = value.to(x.dtype) if isinstance(value, T.Tensor) else T._scalar(value, x)
    if v.dtype != x.dtype:
        v = T.cast(v, x.dtype)
    nkey = _normalize_key(x, key)
    if any(_scalar_bool(k) for k in nkey):  # x[True] = v writes x (a new axis), x[False] = v nothing
        if not all(bool(k) for k in nkey if _scalar_bool(k)):
            return
        nkey = [None if _scalar_bool(k) else k for k in nkey]
    if not any(isinstance(k, (T.Tensor, np.ndarray, list)) for k in nkey):
        shape, _, (starts, steps, sizes) = _basic(before, nkey, values=False)
        while v.ndim > len(shape) and v.shape[0] == 1:  # leading 1s are dropped, as PyTorch: a[0] = ones(1, 4)
            v = T.reshape(v, v.shape[1:])
        v = T.broadcast_to(v, shape) if v.shape != shape else v
        v = T.reshape(v, tuple(sizes))
        x._assign(T._op("slice_scatter", before, v, starts=starts, steps=steps))
        return
    ints = [i for i, k in enumerate(nkey) if isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_))]
    arrays = [k for k in nkey if isinstance(k, (T.Tensor, np.ndarray, list))]
    if ints and len(ints) + len(arrays) < len(nkey) and all(
            isinstance(k, (int, np.integer, slice)) or (k.dtype is not _dt.bool if isinstance(k, T.Tensor) else
                                                        np.asarray(k).dtype != np.bool_) for k in nkey):
        # ints beside slices and index arrays (x[:, 0, :, idx, 1] = v): PyTorch selects the ints'
        # axes first, then places the index arrays among what is left (as x[...] reads it), so
        # the rest is written on that selection and put back
        return _put_with_selects(x, before, nkey, ints, v)
    # beside an index array an int is an index too (NumPy's rule): x[range(n), 3] = v
    nkey = [np.asarray(k) if isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)) else k
            for k in nkey]
    adv = [k if isinstance(k, T.Tensor) else np.asarray(k) for k in nkey
           if isinstance(k, (T.Tensor, np.ndarray, list))]
    k = len(adv)
    leading = all(isinstance(a, (T.Tensor, np.ndarray, list)) for a in nkey[:k]) and \
        all(isinstance(s, slice) and s == slice(None) for s in nkey[k:])
    masks = [a.dtype in (_dt.bool, np.bool_) for a in adv]
    if leading and k == 1 and masks[0] and (v.numel() == 1 or v.shape == x.shape):
        # a bool mask over the leading axes and one value (or x's shape): where(mask, value, x)
        mask = adv[0] if isinstance(adv[0], T.Tensor) else T.from_numpy(adv[0])
        mask = T.reshape(mask, mask.shape + (1,) * (x.ndim - mask.ndim))
        x._assign(T.where(mask, v, before))
        return
    if leading and k == 1 and masks[0]:
        # values for the True positions in order (PyTorch's x[mask] = v, v of (count, *rest)):
        # the positions are read from the mask (a wait, as reading x[mask] is)
        adv = _mask_positions(adv[0], None)
        k = len(adv)
        masks = [False] * k
    if leading and not any(masks):
        # integer indices on the leading k axes (x[rows, cols] = v): rows of those axes merged
        for a, n in zip(adv, x.shape):
            T._indices(a, n, "index_put")  # IndexError here: a tensor's dtype, client-known values
        index, bshape = _flat_index(adv, x.shape[:k])
        rest = x.shape[k:]
        rows = T.reshape(T.broadcast_to(v, tuple(bshape) + rest), (index.shape[0],) + rest)
        flat = T.reshape(before, (math.prod(x.shape[:k]),) + rest)
        x._assign(T.reshape(put_rows(flat, index, rows), x.shape))
        return
    if not any(masks) and all(isinstance(a, (slice, T.Tensor, np.ndarray, list)) for a in nkey):
        # integer indices on other axes, beside slices (gpt-fast's KV cache: k[:, :, pos] = v)
        x._assign(_put_on_axes(before, nkey, v))
        return
    raise NotImplementedError("x[key] = value supports ints, slices, '...', integer indices beside slices, or one "
                              "bool mask over the leading axes; this key mixes them otherwise (None, or a mask "
                              "after other axes)")


def _put_with_selects(x, before, nkey, ints, v):
    """x[nkey] = v for a key of ints, slices and integer index arrays (no masks, no None): the
    ints' axes selected (size-1 slices), the rest written there by _put_on_axes, put back."""
    one = [slice(int(k) % x.shape[d], int(k) % x.shape[d] + 1) if d in ints else slice(None)
           for d, k in enumerate(nkey)]
    for d in ints:
        n = x.shape[d]
        if not -n <= int(nkey[d]) < n:
            raise IndexError(f"index {int(nkey[d])} is out of bounds for dimension {d} with size {n}")
    _, _, (starts, steps, sizes) = _basic(before, one, values=False)
    window = _basic(before, one)[0]
    kept = [d for d in range(x.ndim) if d not in ints]
    selected = T.reshape(window, tuple(window.shape[d] for d in kept))
    new = _put_on_axes(selected, [nkey[d] for d in kept], v)
    x._assign(T._op("slice_scatter", before, T.reshape(new, tuple(sizes)), starts=starts, steps=steps))


def _put_on_axes(before, nkey, v):
    """`before` with x[nkey] = v, nkey of slices and integer index arrays (one per axis): the
    slices' window is cut out, its indexed axes moved to the front and merged, the rows put
    there (put_rows), and the window written back. v broadcasts to the shape x[nkey] has by
    NumPy's rules (the index's shape in place of consecutive indexed axes, else first)."""
    basic = [a if isinstance(a, slice) else slice(None) for a in nkey]
    window = None
    if any(a != slice(None) for a in basic):
        _, _, window = _basic(before, basic, values=False)
        sub = _basic(before, basic)[0]
    else:
        sub = before
    axes = [i for i, a in enumerate(nkey) if not isinstance(a, slice)]
    adv = [a if isinstance(a, T.Tensor) else np.asarray(a) for a in nkey if not isinstance(a, slice)]
    for a, ax in zip(adv, axes):
        T._indices(a, sub.shape[ax], "index_put")  # IndexError here: a tensor's dtype, client-known values
    index, bshape = _flat_index(adv, [sub.shape[a] for a in axes])
    others = [i for i in range(sub.ndim) if i not in axes]
    rest = tuple(sub.shape[i] for i in others)
    place = axes[0] if axes == list(range(axes[0], axes[0] + len(axes))) else 0
    nb = len(bshape)
    shape = rest[:place] + tuple(bshape) + rest[place:]
    while v.ndim > len(shape) and v.shape[0] == 1:  # leading 1s are dropped, as PyTorch
        v = T.reshape(v, v.shape[1:])
    v = T.broadcast_to(v, shape)
    v = T.permute(v, *range(place, place + nb), *range(place), *range(place + nb, len(shape)))  # index block first
    rows = T.reshape(v, (index.shape[0],) + rest)
    moved = T.permute(sub, *axes, *others)
    flat = T.reshape(moved, (math.prod(sub.shape[a] for a in axes),) + rest)
    new = T.permute(T.reshape(put_rows(flat, index, rows), moved.shape), *np.argsort(axes + others).tolist())
    if window is None:
        return new
    starts, steps, sizes = window
    return T._op("slice_scatter", before, T.reshape(new, tuple(sizes)), starts=starts, steps=steps)


def group_ends(pos, key=None, descending=False):
    """A bool per element of the 1-D int64 `pos`: whether it is the last of the elements with
    its value of pos, in their order (or ordered by `key`, a 1-D tensor of pos's length, then
    their order). PyTorch's CPU index_put_ writes listed rows in order, so a row listed twice
    keeps the last value listed for it; with key=values that last one is the largest (the
    smallest with descending=True): scatter_reduce's amax (amin). Stable sorts: the positions
    sorted by key, then stably by pos, end each pos's run at its last one."""
    n = pos.shape[0]
    if n <= 1:
        return T.ones((n,), dtype=_dt.bool)
    order = None
    if key is not None:
        order = T._op("argsort", key, axis=0, descending=bool(descending))
        pos = T.index_select(pos, 0, order)
    by_pos = T._op("argsort", pos, axis=0, descending=False)
    ranked = T.index_select(pos, 0, by_pos)
    if order is not None:
        by_pos = T.index_select(order, 0, by_pos)
    ends = T.cat([T.narrow(ranked, 0, 0, n - 1) != T.narrow(ranked, 0, 1, n - 1), T.ones(1, dtype=_dt.bool)], 0)
    return T.index_add_zeros((n,), 0, by_pos, T.cast(ends, _dt.int32)) > 0


def put_rows(x, index, rows, last=None):
    """x with row index[i] (along axis 0) replaced by rows[i] for each i where `last` (a bool
    per position; default group_ends(index): a row listed twice takes the last value listed
    for it, as PyTorch's CPU index_put_ leaves that case it documents as undefined). Recorded
    for autograd when x or rows requires grad (the MAE's decoder_tokens[b, idx] = tokens): the
    gradient reaches the rows written (not one a later row wrote over: it does not reach the
    result) through index_add, and x where no row replaced it."""
    with no_grad():
        if last is None:
            last = group_ends(index)
        hits = T.index_add_zeros(x.shape[:1], 0, index, T.cast(last, _dt.int32))
        hit = T.reshape(hits > 0, x.shape[:1] + (1,) * (x.ndim - 1))
        keep = T.reshape(last, last.shape + (1,) * (rows.ndim - 1))
    written = T.index_add_zeros(x.shape, 0, index, T.where(keep, rows, T.zeros((), dtype=rows.dtype)))
    return T.where(hit, written, x)  # (recorded only where grad mode is on and x or rows requires grad)
