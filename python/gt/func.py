"""torch.func (functorch): function transforms over gt tensors.

    grad(f, argnums=0, has_aux=False)       a function returning df/dx (f returns one element)
    grad_and_value(f, ...)                  ... returning (df/dx, f(x))
    vjp(f, *primals, has_aux=False)         (f(primals), vjp_fn): vjp_fn(v) gives v^T J per primal
    jvp(f, primals, tangents)               (f(primals), J tangents)
    jacrev(f, argnums=0) / jacfwd(...)      a function returning the Jacobian
    hessian(f, argnums=0)                   a function returning the Hessian
    vmap(f, in_dims=0, out_dims=0)          f mapped over a batch dimension
    functional_call(module, params, args)   module called with other parameters and buffers
    stack_module_state(models)              the models' parameters and buffers, stacked

How GT computes them: every transform is built on gt.autograd's reverse mode (the tape), not on
PyTorch's functorch interpreter stack. grad and jacrev run one backward pass per output
element; jvp uses two backward passes (J v is the gradient of <J^T u, v> with respect to u,
PyTorch's "double-backward trick"). jacfwd uses the same trick column by column: one recorded
backward pass gives g(u) = J^T u, then one backward pass of g per input element gives a column
of J (cost: input elements + 1 passes against jacrev's output elements; the values are the
same), so hessian = jacfwd(jacrev(f)) costs f's outputs + inputs + 1 passes where two
reverse levels would cost outputs x inputs. A function whose gradient ops cannot be
differentiated again falls back to jacrev's passes. Transforms nest (grad(grad(f)), jacrev(grad(f)), vmap(grad(f))):
inside a transform every derivative is recorded (create_graph), so an outer one can
differentiate it; second derivatives need ops whose backward formulas are differentiable,
and raise RuntimeError naming the op otherwise.

vmap runs f once per batch element and stacks the results (PyTorch batches the ops instead):
the values are the same for functions of one example; its cost is one call of f per element.
randomness="error" cannot be checked by a loop and is treated as "different" (each call
draws its own numbers); "same" raises NotImplementedError.

argnums is an int or a tuple of ints; primals, in_dims and outputs may be tensors or nested
tuples, lists and dicts of tensors (pytrees), as in PyTorch.
"""
import contextlib
import functools

from . import _tensor
from ._functions import stack as _stack
from .autograd import enable_grad, grad as _autograd_grad, is_grad_enabled

__all__ = ["grad", "grad_and_value", "vjp", "jvp", "jacrev", "jacfwd", "hessian", "vmap", "functional_call",
           "stack_module_state", "replace_all_batch_norm_modules_", "functionalize"]

Tensor = _tensor.Tensor


# ---------------------------------------------------------------- pytrees (tuple, list, dict)

def _flatten(tree):
    """(leaves, rebuild): rebuild(new_leaves) gives tree's structure holding new_leaves."""
    if isinstance(tree, (tuple, list)):
        parts = [_flatten(x) for x in tree]
        leaves = [leaf for ls, _ in parts for leaf in ls]

        def rebuild(new, kind=type(tree)):
            out, i = [], 0
            for ls, rb in parts:
                out.append(rb(new[i:i + len(ls)]))
                i += len(ls)
            return kind(out) if kind in (tuple, list) else kind(*out)
        return leaves, rebuild
    if isinstance(tree, dict):
        keys = list(tree)
        parts = [_flatten(tree[k]) for k in keys]
        leaves = [leaf for ls, _ in parts for leaf in ls]

        def rebuild(new):
            out, i = {}, 0
            for k, (ls, rb) in zip(keys, parts):
                out[k] = rb(new[i:i + len(ls)])
                i += len(ls)
            return out
        return leaves, rebuild
    return [tree], lambda new: new[0]


def _tensors(tree, what):
    leaves, rebuild = _flatten(tree)
    for leaf in leaves:
        if not isinstance(leaf, Tensor):
            raise TypeError(f"{what}: expected tensors (or tuples, lists and dicts of them), got {type(leaf).__name__}")
    return leaves, rebuild


# ---------------------------------------------------------------- differentiation

def _nested():
    """Whether derivatives must be recorded: inside another transform (or a caller that
    records), the result is differentiated again."""
    return _level[0] > 0


_level = [0]


@contextlib.contextmanager
def _transform():
    _level[0] += 1
    try:
        with enable_grad():
            yield
    finally:
        _level[0] -= 1


def _leaf(t, record):
    # Inside another transform: an alias that keeps the outer history; else a fresh leaf.
    if not t.is_floating_point():
        raise TypeError(f"only floating-point tensors can be differentiated, got {t.dtype}")
    return t.view_as(t) if record and t.requires_grad else t.detach().requires_grad_(True)


def _argnums(argnums, nargs, fn_name):
    many = isinstance(argnums, tuple)
    nums = argnums if many else (argnums,)
    if not nums:
        raise RuntimeError(f"{fn_name}: argnums must be non-empty")
    for n in nums:
        if not isinstance(n, int):
            raise RuntimeError(f"{fn_name}: argnums must be int or Tuple[int, ...], got: {type(n).__name__}")
        if not -nargs <= n < nargs:
            raise RuntimeError(f"Got argnums={n}, but only {nargs} positional inputs")
    return many, tuple(n % nargs for n in nums)


def _grads(outputs, inputs, seeds, record):
    live = [(o, s) for o, s in zip(outputs, seeds) if o.requires_grad]
    gs = (_autograd_grad([o for o, _ in live], inputs, [s for _, s in live], retain_graph=True, create_graph=record,
                         allow_unused=True) if live else (None,) * len(inputs))
    return [(g if record else g.detach()) if g is not None else _tensor.zeros(t.shape, dtype=t.dtype)
            for g, t in zip(gs, inputs)]


def _differentiable_args(args, argnums, fn_name, record):
    """args with the argnums ones replaced by leaves; returns (args, per-argnum (leaves, rebuild))."""
    args = list(args)
    picked = []
    for n in argnums:
        leaves, rebuild = _tensors(args[n], f"{fn_name}: argument {n}")
        leaves = [_leaf(t, record) for t in leaves]
        args[n] = rebuild(leaves)
        picked.append((leaves, rebuild))
    return args, picked


def _regroup(picked, flat):
    """`flat` (one tensor per leaf of the picked arguments, in order) back in each argument's
    structure: a list with one entry per argument."""
    results, i = [], 0
    for leaves, rebuild in picked:
        results.append(rebuild(flat[i:i + len(leaves)]))
        i += len(leaves)
    return results


def _split_aux(out, has_aux, fn_name):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(f"{fn_name}(f, ...)(*args): output of function f should be a tuple: (output, aux) "
                           "if has_aux is True")
    return out


def grad_and_value(func, argnums=0, has_aux=False):
    """A function returning (gradient, value) of func, which must return one element (and an
    aux value with has_aux: then ((gradient), (value, aux))). The gradient has the structure of
    args[argnums] (a tuple of them for a tuple of argnums). Raises RuntimeError when func returns
    more than one element."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        many, nums = _argnums(argnums, len(args), "grad_and_value")
        record = _nested() or is_grad_enabled() and _any_requires_grad(args)
        with _transform():
            args2, picked = _differentiable_args(args, nums, "grad", True)
            out, aux = _split_aux(func(*args2, **kwargs), has_aux, "grad_and_value")
            if not isinstance(out, Tensor):
                raise RuntimeError(f"grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got {type(out).__name__}")
            if out.numel() != 1:
                raise RuntimeError("grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, got tensor "
                                   f"with {out.dim()} dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
            all_leaves = [t for leaves, _ in picked for t in leaves]
            gs = _grads([out], all_leaves, [_tensor.ones(out.shape, dtype=out.dtype)], record)
        results = _regroup(picked, gs)
        g = tuple(results) if many else results[0]
        value = out if record else out.detach()
        return (g, (value, aux)) if has_aux else (g, value)
    return wrapper


def grad(func, argnums=0, has_aux=False):
    """A function returning the gradient of func (one element) with respect to args[argnums]
    (with has_aux: (gradient, aux)), as torch.func.grad."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g
    return wrapper


def _any_requires_grad(tree):
    leaves, _ = _flatten(tree)
    return any(isinstance(t, Tensor) and t.requires_grad for t in leaves)


def vjp(func, *primals, has_aux=False):
    """(func(*primals), vjp_fn[, aux]): vjp_fn(cotangents) returns a tuple with v^T J for each
    primal; cotangents has the structure and shapes of func's output."""
    if not primals:
        raise RuntimeError("vjp: expected at least one primal")
    record = _nested() or is_grad_enabled() and _any_requires_grad(primals)
    with _transform():
        args, picked = _differentiable_args(primals, tuple(range(len(primals))), "vjp", True)
        out, aux = _split_aux(func(*args), has_aux, "vjp")
    outs, _ = _tensors(out, "vjp: the output of f")
    shapes = [tuple(o.shape) for o in outs]

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        seeds, _ = _tensors(cotangents, "vjp_fn: cotangents")
        if [tuple(s.shape) for s in seeds] != shapes:
            raise RuntimeError(f"vjp_fn: expected cotangents with the output's shapes {shapes}, got "
                               f"{[tuple(s.shape) for s in seeds]}")
        rec = record or _nested() if create_graph is None else create_graph
        all_leaves = [t for leaves, _ in picked for t in leaves]
        with enable_grad():
            gs = _grads(outs, all_leaves, seeds, rec)
        return tuple(_regroup(picked, gs))

    value = out if record else _detach_tree(out)
    return (value, vjp_fn, aux) if has_aux else (value, vjp_fn)


def _detach_tree(tree):
    leaves, rebuild = _flatten(tree)
    return rebuild([t.detach() if isinstance(t, Tensor) else t for t in leaves])


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """(func(*primals), J tangents[, aux]): primals and tangents are tuples of the same
    structure and shapes. Two backward passes (see the module's docstring)."""
    if not isinstance(primals, tuple) or not isinstance(tangents, tuple):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be tuples")
    p_leaves, _ = _tensors(primals, "jvp: primals")
    t_leaves, _ = _tensors(tangents, "jvp: tangents")
    if [tuple(t.shape) for t in p_leaves] != [tuple(t.shape) for t in t_leaves]:
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to have the same shapes, got "
                           f"{[tuple(t.shape) for t in p_leaves]} and {[tuple(t.shape) for t in t_leaves]}")
    record = _nested() or is_grad_enabled() and (_any_requires_grad(primals) or _any_requires_grad(tangents))
    with _transform():
        args, picked = _differentiable_args(primals, tuple(range(len(primals))), "jvp", True)
        out, aux = _split_aux(func(*args), has_aux, "jvp")
        outs, rebuild_out = _tensors(out, "jvp: the output of f")
        us = [_tensor.zeros(o.shape, dtype=o.dtype).requires_grad_(True) for o in outs]
        all_leaves = [t for leaves, _ in picked for t in leaves]
        live = [(o, u) for o, u in zip(outs, us) if o.requires_grad]
        vjps = (_autograd_grad([o for o, _ in live], all_leaves, [u for _, u in live], retain_graph=True,
                               create_graph=True, allow_unused=True) if live else [None] * len(all_leaves))
        pairs = [(g, v) for g, v in zip(vjps, t_leaves) if g is not None and g.requires_grad]
        if pairs:
            result = _grads([g for g, _ in pairs], us, [v for _, v in pairs], record)
        else:
            result = [_tensor.zeros(o.shape, dtype=o.dtype) for o in outs]
    value = out if record else _detach_tree(out)
    tangent_out = rebuild_out(result)
    return (value, tangent_out, aux) if has_aux else (value, tangent_out)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None):
    """A function returning the Jacobian of func with respect to args[argnums]: for an output
    of shape O and an argument of shape I, a tensor of shape O + I (nested as the output and
    the arguments are). One backward pass per output element."""
    return _jacobian(func, argnums, has_aux, "jacrev", lambda outs, leaves, record: [_rows(o, leaves, record)
                                                                                     for o in outs])


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """torch.func.jacfwd: the Jacobian of func with respect to args[argnums], column by column
    (one column per input element: see the module's docstring), the same values as jacrev.
    The cheaper of the two where func has more outputs than inputs."""
    def blocks(outs, leaves, record):
        try:
            return _columns(outs, leaves, record)
        except RuntimeError:  # a gradient op without a derivative of its own: one pass per output element
            return [_rows(o, leaves, record) for o in outs]
    return _jacobian(func, argnums, has_aux, "jacfwd", blocks)


def _jacobian(func, argnums, has_aux, name, blocks):
    """jacrev and jacfwd: `blocks(outputs, leaves, record)` gives, per output, d output / d leaf
    for every leaf of the picked arguments; they are regrouped as the arguments and outputs."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        many, nums = _argnums(argnums, len(args), name)
        record = _nested() or is_grad_enabled() and _any_requires_grad(args)
        with _transform():
            args2, picked = _differentiable_args(args, nums, name, True)
            out, aux = _split_aux(func(*args2, **kwargs), has_aux, name)
            outs, rebuild_out = _tensors(out, f"{name}: the output of f")
            all_leaves = [t for leaves, _ in picked for t in leaves]
            per_output = []
            for row in blocks(outs, all_leaves, record):
                results = _regroup(picked, row)
                per_output.append(tuple(results) if many else results[0])
        jac = rebuild_out(per_output)
        return (jac, aux) if has_aux else jac
    return wrapper


def _rows(o, leaves, record):
    """d o / d leaf for each leaf (shape o.shape + leaf.shape), one backward pass per element of o."""
    n = o.numel()
    eye = _tensor.eye(n, dtype=o.dtype) if n else None
    rows = [_grads([o], leaves, [eye[k].reshape(o.shape)], record) for k in range(n)]
    return [(_stack([r[j] for r in rows]) if rows else _tensor.zeros((0,) + tuple(t.shape), dtype=t.dtype))
            .reshape(tuple(o.shape) + tuple(t.shape)) for j, t in enumerate(leaves)]


def _columns(outs, leaves, record):
    """blocks[i][j] = d outs[i] / d leaves[j] (shape outs[i].shape + leaves[j].shape), one
    column per element of the leaves: g_j(u) = sum_i J_ij^T u_i is recorded once (u = 0; g is
    linear in u), and the gradient of g_j's k-th element with respect to each u_i is column k of
    J_ij. Raises RuntimeError where a gradient op cannot be differentiated (the caller then
    takes rows)."""
    us = [_tensor.zeros(o.shape, dtype=o.dtype).requires_grad_(True) for o in outs]
    live = [(o, u) for o, u in zip(outs, us) if o.requires_grad]
    gs = (_autograd_grad([o for o, _ in live], leaves, [u for _, u in live], retain_graph=True, create_graph=True,
                         allow_unused=True) if live else [None] * len(leaves))
    blocks = [[None] * len(leaves) for _ in outs]
    for j, (g, t) in enumerate(zip(gs, leaves)):
        n = t.numel()
        if g is not None and not g.requires_grad and n:
            # J^T u computed without recording (a custom backward outside autograd): its columns
            # cannot be read this way.
            raise RuntimeError("jacfwd: a gradient was computed without recording")
        if g is None or n == 0:
            for i, o in enumerate(outs):
                blocks[i][j] = _tensor.zeros(tuple(o.shape) + tuple(t.shape), dtype=t.dtype)
            continue
        eye = _tensor.eye(n, dtype=g.dtype)
        cols = [_grads([g], us, [eye[k].reshape(g.shape)], record) for k in range(n)]
        for i, o in enumerate(outs):
            blocks[i][j] = _stack([c[i] for c in cols], dim=o.dim()).reshape(tuple(o.shape) + tuple(t.shape))
    return blocks


def hessian(func, argnums=0):
    """A function returning the Hessian of func (one element out) with respect to
    args[argnums]: shape I + I for an argument of shape I."""
    return jacfwd(jacrev(func, argnums), argnums)


# ---------------------------------------------------------------- vmap

def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """func mapped over a dimension of its inputs: in_dims gives, for each positional argument
    (an int for all of them), the dimension to map over (None: the argument is passed whole to
    every call); out_dims where the mapped dimension goes in each output. Runs func once per
    element along that dimension and stacks the results (see the module's docstring). Raises
    ValueError when the mapped inputs disagree on the batch size or none is mapped."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")
    if randomness == "same":
        raise NotImplementedError("vmap(randomness='same') is not supported by GT's vmap (it calls func once per "
                                  "element, each drawing its own random numbers)")

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        dims = in_dims if isinstance(in_dims, (tuple, list)) else (in_dims,) * len(args)
        if len(dims) != len(args):
            raise ValueError(f"vmap(f, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the structure "
                             f"of `inputs`. in_dims has structure with {len(dims)} entries but inputs has {len(args)}.")
        # Pair every tensor leaf with its dimension (an int or None given for a whole subtree).
        mapped, rebuilders = [], []
        for a, d in zip(args, dims):
            leaves, rebuild = _flatten(a)
            if isinstance(d, (tuple, list, dict)):
                d_leaves, _ = _flatten(d)
                if len(d_leaves) != len(leaves):
                    raise ValueError(f"vmap: in_dims {d} does not match the structure of its argument")
            else:
                d_leaves = [d] * len(leaves)
            for leaf, dl in zip(leaves, d_leaves):
                if dl is not None and not isinstance(leaf, Tensor):
                    raise ValueError(f"vmap: Got in_dim={dl} for an input but the input is of type {type(leaf).__name__}. "
                                     "We cannot vmap over non-Tensor arguments, please use None as the respective in_dim")
                if dl is not None and not -leaf.dim() <= dl < max(leaf.dim(), 1):
                    raise ValueError(f"vmap: Got in_dim={dl} for an input but the input is of dimension {leaf.dim()}")
            mapped.append((leaves, d_leaves))
            rebuilders.append(rebuild)
        sizes = {leaf.shape[dl] for leaves, ds in mapped for leaf, dl in zip(leaves, ds) if dl is not None}
        if not sizes:
            raise ValueError("vmap(f, in_dims=..., ...)(<inputs>): at least one input must be mapped over "
                             "(got in_dims=None for every input)")
        if len(sizes) > 1:
            raise ValueError("vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                             f"{sorted(sizes)} for the mapped dimension")
        batch = sizes.pop()
        results = []
        for i in range(batch):
            call = []
            for (leaves, ds), rebuild in zip(mapped, rebuilders):
                call.append(rebuild([leaf.select(dl, i) if dl is not None else leaf for leaf, dl in zip(leaves, ds)]))
            results.append(func(*call, **kwargs))
        first, rebuild_out = _flatten(results[0])
        per_leaf = [_flatten(r)[0] for r in results]
        odims = out_dims if isinstance(out_dims, (tuple, list)) else (out_dims,) * len(first)
        if len(odims) != len(first):
            raise ValueError(f"vmap: out_dims {out_dims} does not match the {len(first)} outputs")
        stacked = []
        for j, od in enumerate(odims):
            column = [leaves[j] for leaves in per_leaf]
            if not all(isinstance(c, Tensor) for c in column):
                raise ValueError(f"vmap: `{getattr(func, '__name__', 'f')}` must only return Tensors, got type "
                                 f"{type(column[0]).__name__}")
            if od is None:
                stacked.append(column[0])
            else:
                stacked.append(_stack(column, dim=od))
        return rebuild_out(stacked)
    return wrapper


# ---------------------------------------------------------------- modules

def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """module(*args, **kwargs) with its parameters and buffers replaced by the tensors of
    `parameter_and_buffer_dicts` (a dict, or a tuple of dicts, of dotted names as
    named_parameters gives them) for the call only; the module is unchanged afterwards. With
    tie_weights, a tensor given for one of several names that share one tensor in the module
    (tied weights) replaces it under all of them. strict=True raises RuntimeError unless
    every parameter and buffer is given exactly; a name the module lacks is set as a plain
    attribute for the call."""
    dicts = parameter_and_buffer_dicts if isinstance(parameter_and_buffer_dicts, (tuple, list)) else (parameter_and_buffer_dicts,)
    values = {}
    for d in dicts:
        for k, v in d.items():
            if k in values:
                raise ValueError(f"{k} appeared in multiple dictionaries; behavior of functional call is ambiguous")
            values[k] = v
    if tie_weights:
        by_tensor = {}
        for name, t in _all_named(module):
            by_tensor.setdefault(id(t), []).append(name)
        for names in by_tensor.values():
            given = [n for n in names if n in values]
            if len(given) > 1 and len({id(values[n]) for n in given}) > 1:
                raise ValueError(f"functional_call got multiple values for keys {given}, which are tied. "
                                 "Consider using tie_weights=False")
            if given:
                for n in names:
                    values.setdefault(n, values[given[0]])
    if strict:
        names = {n for n, _ in _all_named(module)}
        missing, unexpected = sorted(names - set(values)), sorted(set(values) - names)
        if missing or unexpected:
            raise RuntimeError("Error(s) in reparametrizing for " + type(module).__name__ + ": "
                               + (f"Missing key(s): {missing}. " if missing else "")
                               + (f"Unexpected key(s): {unexpected}." if unexpected else ""))
    swapped = []
    try:
        for name, value in values.items():
            owner, _, leaf = name.rpartition(".")
            m = module.get_submodule(owner)
            swapped.append(_swap(m, leaf, value))
        args = () if args is None else args if isinstance(args, tuple) else (args,)
        return module(*args, **(kwargs or {}))
    finally:
        for undo in reversed(swapped):
            undo()


def _all_named(module):
    """(dotted name, tensor) for every parameter and buffer, tied ones under each name."""
    for prefix, m in module.named_modules():
        for name, t in list(m._parameters.items()) + list(m._buffers.items()):
            if t is not None:
                yield (f"{prefix}.{name}" if prefix else name), t


def _swap(m, name, value):
    """Puts `value` as m.name for the call; returns how to undo it. A parametrized tensor's name
    (m.weight under parametrizations.weight) gives `value` itself for the call, the
    parametrization bypassed and its originals untouched, as PyTorch's functional_call."""
    sentinel = object()
    parametrizations = m.__dict__.get("_modules", {}).get("parametrizations")
    if parametrizations is not None and name in parametrizations._modules:
        cls = type(m)
        m.__class__ = type(cls.__name__, (cls,), {name: property(lambda self: value), "__module__": cls.__module__})

        def undo_parametrized():
            m.__class__ = cls
        return undo_parametrized
    for table in (m._parameters, m._buffers):
        if name in table:
            old, old_attr = table[name], m.__dict__.get(name, sentinel)
            table[name] = value
            m.__dict__[name] = value

            def undo(table=table, old=old, old_attr=old_attr):
                table[name] = old
                if old_attr is sentinel:
                    m.__dict__.pop(name, None)
                else:
                    m.__dict__[name] = old_attr
            return undo
    old_attr = m.__dict__.get(name, sentinel)
    object.__setattr__(m, name, value)

    def undo_attr():
        if old_attr is sentinel:
            m.__dict__.pop(name, None)
        else:
            m.__dict__[name] = old_attr
    return undo_attr


def replace_all_batch_norm_modules_(root):
    """Makes every batch norm module of `root` use the batch's statistics and keep none
    (running_mean / running_var None, track_running_stats False), in place, as
    torch.func.replace_all_batch_norm_modules_ (for vmap over a model). Returns root."""
    from .nn.modules import _BatchNorm
    for m in root.modules():
        if isinstance(m, _BatchNorm):
            m.running_mean, m.running_var, m.num_batches_tracked = None, None, None
            m.track_running_stats = False
    return root


def functionalize(func, *, remove="mutations"):
    """func itself: torch.func.functionalize removes in-place ops from a traced program, and GT
    runs the function eagerly with the same results."""
    return func


def stack_module_state(models):
    """(params, buffers): for each name, the models' tensors stacked along a new first
    dimension (the models must share one structure), as torch.func.stack_module_state, for
    vmap over an ensemble with functional_call. The stacked parameters are new leaves that
    require grad (detached from the models')."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if not (all(m.training for m in models) or not any(m.training for m in models)):
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    first = type(models[0])
    if not all(type(m) is first for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    params = {name: _stack([dict(m.named_parameters())[name].detach() for m in models]).requires_grad_(True)
              for name, _ in models[0].named_parameters()}
    buffers = {name: _stack([dict(m.named_buffers())[name] for m in models])
               for name, _ in models[0].named_buffers()}
    return params, buffers
