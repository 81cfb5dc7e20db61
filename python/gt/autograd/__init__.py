"""Reverse-mode autograd: the tape lives on the tensors, the formulas in one table.

Each op that needs a gradient stores a Node on its output: its backward function, inputs,
attributes and signal. An op with derivative formulas (ops/*.yaml `grad:`) has as its
backward function a call into the client core, which runs the formulas from the derivative
table (lib/Client/Autograd.cpp; python/gt/_ops.py fills `formulas` with these calls); each
takes (grad_output, output, inputs, attrs) and returns one gradient (or None) per input,
already reduced to that input's shape when the op broadcast it. The backward pass below walks
the graph, runs hooks and accumulates `.grad`; gradient ops carry the line of the forward op
they differentiate.
"""
import weakref
import functools

from .. import _C, _derivatives, _runtime
from . import _names

formulas = {}  # op name -> backward function; filled by gt._ops from the spec's `grad:` formulas


def is_grad_enabled():
    """Whether ops record history on this thread (the client core holds the setting)."""
    return _C.is_grad_enabled()


class _grad_mode:
    """Context manager (and decorator) that sets whether ops record history, restoring the
    previous setting on exit. A class rather than a contextlib generator: Function.apply and
    every optimizer step enter one, and this costs a third as much."""
    __slots__ = ("enabled", "previous")

    def __init__(self, enabled):
        self.enabled = enabled

    def __enter__(self):
        self.previous = _C.set_grad_enabled(self.enabled)

    def __exit__(self, *exc):
        _C.set_grad_enabled(self.previous)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with _grad_mode(self.enabled):
                return fn(*args, **kwargs)
        return wrapper


def no_grad(orig_func=None):
    """Context manager: ops inside record no history (for updates and evaluation); a decorator
    too, with or without parentheses (`@gt.no_grad()`, `@gt.no_grad`), as torch.no_grad."""
    return _grad_mode(False) if orig_func is None else _grad_mode(False)(orig_func)


def enable_grad(orig_func=None):
    """Context manager (or decorator, with or without parentheses): ops inside record history
    even under no_grad."""
    return _grad_mode(True) if orig_func is None else _grad_mode(True)(orig_func)


class set_grad_enabled(_grad_mode):
    """Sets whether ops record history, at once (as torch.set_grad_enabled): called alone it
    stays set; as a context manager the previous setting comes back on exit."""
    __slots__ = ()

    def __init__(self, mode):
        self.enabled = bool(mode)
        self.previous = _C.set_grad_enabled(self.enabled)

    def __enter__(self):
        pass

    def __call__(self, fn):  # as a decorator: the setting applies inside fn only
        _C.set_grad_enabled(self.previous)
        return super().__call__(fn)


_anomaly = [False, True]  # detect_anomaly's setting: (enabled, check_nan)


class set_detect_anomaly:
    """torch.autograd.set_detect_anomaly(mode, check_nan=True): sets anomaly mode at once (a
    context manager restores the previous setting on exit). GT records the setting
    (is_anomaly_enabled() reads it) but checks nothing: its backward passes keep no forward
    tracebacks and do not test gradients for NaN, so turning it on warns once."""

    def __init__(self, mode, check_nan=True):
        self.previous = tuple(_anomaly)
        _anomaly[:] = [bool(mode), bool(check_nan)]
        if mode and not _anomaly_warned:
            _anomaly_warned.append(True)
            import warnings
            warnings.warn("torch.autograd anomaly detection: GT records the setting but does not check backward "
                          "passes for NaN or keep forward tracebacks", UserWarning, stacklevel=2)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _anomaly[:] = self.previous
        return False


_anomaly_warned = []


class detect_anomaly(set_detect_anomaly):
    """with torch.autograd.detect_anomaly(): anomaly mode inside the block (see
    set_detect_anomaly: GT checks nothing); also a decorator."""

    def __init__(self, check_nan=True):
        self.check_nan = check_nan

    def __enter__(self):
        super().__init__(True, self.check_nan)
        return self

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)
        return wrapper


def is_anomaly_enabled():
    return _anomaly[0]


def is_anomaly_check_nan_enabled():
    return _anomaly[1]


class inference_mode(_grad_mode):
    """torch.inference_mode: no_grad() (with mode=False, a context that records as usual), a
    context manager or a decorator; is_inference_mode_enabled() is True inside it."""
    __slots__ = ("mode", "outer")
    _depth = [False]  # whether inference mode is on now

    def __new__(cls, mode=True):
        if callable(mode):  # @gt.inference_mode without parentheses
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        super().__init__(not mode)
        self.mode = bool(mode)

    def __enter__(self):
        super().__enter__()
        self.outer = inference_mode._depth[0]
        inference_mode._depth[0] = self.mode

    def __exit__(self, *exc):
        inference_mode._depth[0] = self.outer
        return super().__exit__(*exc)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(self.mode):
                return fn(*args, **kwargs)
        return wrapper


def _zero_grads(params, set_to_none=True):
    """Module.zero_grad and Optimizer.zero_grad: every parameter's .grad None, or with
    set_to_none=False the gradients that exist zeroed in place (a parameter without one keeps
    None; a gradient made with create_graph loses its graph first), as PyTorch's."""
    for p in params:
        if set_to_none:
            p.grad = None
        elif p.grad is not None:
            if p.grad.requires_grad:
                p.grad = p.grad.detach()
            p.grad.zero_()


def is_inference_mode_enabled():
    """Whether code runs inside `with gt.inference_mode():` (torch.is_inference_mode_enabled)."""
    return inference_mode._depth[0]


# ---------------------------------------------------------------- the tape

class Node:
    """How a tensor was made, for the backward pass: `backward(g, result, inputs, attrs)` gives
    one gradient (or None) per input; `attrs` are the op's attributes by their spec names;
    `signal` is the gt.signal active when it ran (its gradient ops carry it, as backward)."""
    __slots__ = ("backward", "inputs", "attrs", "signal", "freed_name", "given_name")

    def __init__(self, backward, inputs, attrs, signal):
        self.backward = backward
        self.inputs = inputs
        self.attrs = attrs
        self.signal = signal

    def name(self):
        """PyTorch's kind of name for this node: "MulBackward0" for gt.mul, "<Class>Backward" for
        a custom autograd.Function."""
        global _formula_ops
        freed = getattr(self, "freed_name", None)
        if freed is not None:  # (its graph was released by a backward pass: see _freed_for)
            return freed
        given = getattr(self, "given_name", None)
        if given is not None:  # PyTorch's name for the function that made it (autograd._names)
            return given
        if len(_formula_ops) != len(formulas):
            _formula_ops = {fn: op for op, fn in formulas.items()}
        op = _formula_ops.get(self.backward)
        named = getattr(self.backward, "_gt_node_name", None)
        if named is not None:
            return named
        if op is None:
            op = getattr(self.backward, "__name__", "function").removesuffix("_backward").removesuffix("backward")
            op = op.strip("_") or "function"
        else:
            torch_name = _names.primitive_name(op, self.inputs, self.attrs)
            if torch_name is not None:
                return torch_name
        return "".join(w[:1].upper() + w[1:] for w in op.split("_")) + "Backward0"

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    @property
    def next_functions(self):
        """((node, 0), ...) per input, as PyTorch's: an input's grad_fn, an AccumulateGrad for a
        leaf that requires grad, None for an input that needs no gradient."""
        out = []
        for t in self.inputs or ():
            node = getattr(t, "_node", None)
            if node is not None:
                out.append((node, 0))
            elif getattr(t, "requires_grad", False):
                out.append((AccumulateGrad(t), 0))
            else:
                out.append((None, 0))
        return tuple(out)


_formula_ops = {}  # backward function -> op name (Node.name)


class AccumulateGrad:
    """What PyTorch's next_functions shows for a leaf: `variable` is the leaf whose .grad the
    backward pass adds to."""
    def __init__(self, variable):
        self.variable = variable

    next_functions = ()  # (a leaf's: nothing before it)

    def name(self):
        return "torch::autograd::AccumulateGrad"

    def __repr__(self):
        return f"<AccumulateGrad object at {hex(id(self))}>"


def identity_backward(g, result, inputs, attrs):
    return (g,)


# ---------------------------------------------------------------- the backward pass

def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """torch.autograd.backward: accumulates the gradients of `tensors` (a tensor or a sequence,
    each requiring grad), seeded with `grad_tensors` (one per tensor; None for a scalar: 1),
    into the `.grad` of every leaf above them and of every tensor that called retain_grad(), or
    with `inputs` (a tensor or a sequence) into those tensors' `.grad` only. With create_graph
    the gradient ops are recorded too (for a second derivative)."""
    from .._tensor import Tensor, ones
    roots = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    seeds = grad_tensors if grad_tensors is not None else grad_variables
    seeds = [None] * len(roots) if seeds is None else [seeds] if isinstance(seeds, Tensor) else list(seeds)
    if len(seeds) != len(roots):
        raise RuntimeError(f"got {len(seeds)} gradients for {len(roots)} tensors")
    for i, (r, g) in enumerate(zip(roots, seeds)):
        if not r.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if r.numel() != 1:
                raise RuntimeError(f"grad can be implicitly created only for scalar outputs (shape {r.shape})")
            seeds[i] = ones(r.shape, dtype=r.dtype, device="meta" if r.is_meta else None)
    retain = bool(retain_graph) or create_graph
    if inputs is None:
        _run(roots, seeds, retain, create_graph, None)
        return
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    if not inputs:
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    got = grad(roots, inputs, seeds, retain_graph=retain, create_graph=create_graph, allow_unused=True)
    with no_grad():
        for t, g in zip(inputs, got):
            if g is None:
                continue
            if t.grad is None:
                t.grad = g if create_graph else g.detach()
            else:
                t.grad._assign(t.grad + g)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of `outputs` (a tensor or a sequence) with respect to `inputs` (a tensor or
    a sequence of tensors that require grad), as a tuple, like torch.autograd.grad: nothing is
    accumulated into any `.grad`. grad_outputs: one tensor per output (required for a
    non-scalar output). create_graph records the gradient ops, so the result can be
    differentiated again (retain_graph then defaults to True). An input the outputs do not
    depend on raises RuntimeError unless allow_unused (then None, or zeros with
    materialize_grads). Raises RuntimeError for an input that does not require grad.
    only_inputs is PyTorch's deprecated argument (ignored, with its warning);
    is_grads_batched=True reads the first axis of every grad_output as a batch: one backward
    pass per entry (PyTorch vmaps them), the gradients stacked along a new first axis."""
    from .._tensor import Tensor, ones
    if not only_inputs:
        import warnings
        warnings.warn("only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
                      "gradient for other parts of the graph, please use torch.autograd.backward.",
                      FutureWarning, stacklevel=2)
    if is_grads_batched:  # one backward pass per entry of the grad_outputs' first axis, stacked
        from .._functions import stack
        batched = [grad_outputs] if isinstance(grad_outputs, Tensor) else list(grad_outputs)
        n = batched[0].shape[0]
        per = [grad(outputs, inputs, [g[b] for g in batched], retain_graph=True if b < n - 1 else retain_graph,
                    create_graph=create_graph, allow_unused=allow_unused, materialize_grads=materialize_grads)
               for b in range(n)]
        return tuple(None if per[0][i] is None else stack([p[i] for p in per]) for i in range(len(per[0])))
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    single = isinstance(inputs, Tensor)
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is None:
        grad_outputs = [None] * len(outputs)
    elif isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs]
    if len(grad_outputs) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output: got {len(grad_outputs)} for {len(outputs)} outputs")
    for t in inputs:
        if not isinstance(t, Tensor) or not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    roots, seeds = [], []
    for out, g in zip(outputs, grad_outputs):
        if not out.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a grad_fn")
        if g is None:
            if out.numel() != 1:
                raise RuntimeError(f"grad can be implicitly created only for scalar outputs (shape {out.shape})")
            g = ones(out.shape, dtype=out.dtype, device="meta" if out.is_meta else None)
        elif g.shape != out.shape:
            raise RuntimeError(f"grad_output has shape {g.shape}, expected {out.shape}")
        roots.append(out)
        seeds.append(g)
    if retain_graph is None:
        retain_graph = create_graph
    released = _reaches_released(roots)  # (before this pass releases the graph in turn)
    captured = _run(roots, seeds, retain_graph, create_graph, {id(t) for t in inputs})
    result = []
    for i, t in enumerate(inputs):
        g = captured.get(id(t))
        if g is None:
            if not (allow_unused or materialize_grads):
                if released:  # (its path was released by an earlier backward: PyTorch's error)
                    _freed()
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have been used in the "
                                   "graph. Set allow_unused=True if this is the desired behavior.")
            if materialize_grads:
                from .._tensor import zeros
                g = zeros(t.shape, dtype=t.dtype)
        result.append(g)
    return tuple(result)


def _reaches_released(roots, limit=256):
    """Whether the graph above `roots` holds a node a backward released (_freed_for), among its
    first `limit` nodes (a bounded walk: it only picks the error message)."""
    from .._tensor import Tensor
    stack, seen = [r for r in roots], set()
    while stack and len(seen) < limit:
        t = stack.pop()
        node = getattr(t, "_node", None)
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if node.backward is _freed:
            return True
        stack.extend(x for x in (node.inputs or ()) if isinstance(x, Tensor))
    return False


def _run(roots, seeds, retain_graph, create_graph, wanted):
    """The backward pass from `roots` (gradients `seeds`). wanted=None: accumulate into leaves'
    (and retain_grad tensors') .grad; else a set of tensor ids whose gradients are returned
    (id -> gradient) and nothing else is touched or computed. The client core walks the graph
    and runs the table's formulas (gt._C.Client.backward); hooks, custom Functions, slice
    gradients and sums run here in Python, called from there."""
    from .. import _tensor
    c = _runtime.client()
    # The formulas' ops go straight into the session unless they must be recorded (create_graph),
    # traced (gt.profiler) or cast (autocast), which _op does.
    direct = not create_graph and _tensor._trace is None and _tensor._autocast_dtype is None
    # Gradient ops carry the line of the forward op they differentiate (gt.debug.get_tape,
    # errors, gt.profiler); a hook's ops carry the hook's own lines.
    with _grad_mode(create_graph), _runtime.gradient_signals() as use_signal, _GradLocation(c.set_grad_location):
        return c.backward(roots, seeds, retain_graph, wanted, use_signal, direct)


class _GradLocation:
    """Ops carry the user's line again when the backward pass ends, however it ends."""
    __slots__ = ("set",)

    def __init__(self, set_location):
        self.set = set_location

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.set(0)
        return False


class RemovableHandle:
    """What register_hook returns: remove() unregisters the hook (also on leaving a `with`
    block over the handle), as PyTorch's torch.utils.hooks.RemovableHandle: made with the hooks'
    dict alone it takes a new `id` for the caller to store its hook under (accelerate's hook
    registries), with `extra_dict` (a dict or a list of them) it removes that key there too."""
    next_id = 0

    def __init__(self, hooks, key=None, *, extra_dict=None):
        if key is None:
            key = RemovableHandle.next_id
            RemovableHandle.next_id += 1
        self._hooks, self.id = hooks, key
        self._extra = [] if extra_dict is None else list(extra_dict) if isinstance(extra_dict, list) else [extra_dict]

    def remove(self):
        self._hooks.pop(self.id, None)
        for d in self._extra:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def register_hook(tensor, hook):
    """tensor.register_hook(hook): hook(grad) runs when the gradient of `tensor` is computed and
    may return a tensor to use instead (as PyTorch)."""
    if not tensor.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    hooks = getattr(tensor, "_hooks", None)
    if hooks is None:
        hooks = tensor._hooks = {}
    key = object()
    hooks[key] = hook
    return RemovableHandle(hooks, key)


# ---------------------------------------------------------------- custom functions

class FunctionCtx:
    """The `ctx` of a custom Function: save_for_backward(*tensors) / saved_tensors,
    needs_input_grad (one bool per forward argument), mark_non_differentiable(*outputs),
    mark_dirty(*inputs), set_materialize_grads(flag), and any attribute you set."""

    def __init__(self):
        self.saved_tensors = ()
        self.needs_input_grad = ()
        self._non_differentiable = set()
        self._materialize = True

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors

    def mark_non_differentiable(self, *outputs):
        self._non_differentiable.update(id(o) for o in outputs)

    def mark_dirty(self, *tensors):
        """Marks inputs forward changed in place (PyTorch's in-place Function pattern). An output
        that is one of them is handed back as a new tensor holding its values, on this Function's
        node; the input keeps the history it had (a write inside forward is under no_grad)."""
        self._dirty = tuple(tensors)

    def set_materialize_grads(self, value):
        self._materialize = bool(value)


class Function:
    """A differentiable operation with your own forward and backward, as torch.autograd.Function:

        class Exp(gt.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                return g * y

        y = Exp.apply(x)

    forward runs without recording (its ops are not differentiated); backward gets one gradient
    per output and returns one per forward argument (None for non-tensors or no gradient). A
    function with several outputs calls backward once per output that receives a gradient,
    with zeros for the others (set_materialize_grads(False): None), and sums the results, which
    is right for any backward that is linear in its gradients, as backward formulas are.
    Raises RuntimeError when backward returns the wrong number of gradients or a gradient of
    the wrong shape."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a Function subclass must define forward(ctx, *args)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a Function subclass must define backward(ctx, *grad_outputs)")

    @classmethod
    def apply(cls, *args, **kwargs):
        from .._tensor import Tensor, zeros
        ctx = FunctionCtx()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        with no_grad():
            out = cls.forward(ctx, *args, **kwargs)
        if forward_ad._levels:  # a forward-AD level is open: the output's tangent from cls.jvp
            dual = forward_ad._function_jvp(cls, ctx, args, out)
            if dual is not None:
                return dual
        if not (is_grad_enabled() and any(ctx.needs_input_grad)):
            return out
        single = not isinstance(out, tuple)
        outs = [out] if single else list(out)
        positions = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        inputs = tuple(args[i] for i in positions)
        # The nodes refer to no output: an output holds its node, so a reference back (the outputs
        # for zero gradients, an output in saved_tensors) would be a cycle that only Python's
        # cyclic collector frees, and the tensors in it would stay on the worker until then.
        # Zero gradients need the outputs' shapes and dtypes only; a saved output is the `y`
        # its own node's backward receives, and another output is read through a weak reference
        # (while it lives, with its graph) or else through an alias of its values.
        kinds = [(o.shape, o.dtype) if isinstance(o, Tensor) and o.dtype.is_floating_point else None for o in outs]
        saved_outputs = {}  # position in saved_tensors -> (output index, weak reference, alias)
        for i, s in enumerate(ctx.saved_tensors):
            for j, o in enumerate(outs):
                if s is o and kinds[j] is not None and o._node is None and not any(o is a for a in args):
                    saved_outputs[i] = (j, weakref.ref(o), Tensor(o._h, o.shape, o.dtype))
                    break
        if saved_outputs:
            saved = list(ctx.saved_tensors)
            for i in saved_outputs:
                saved[i] = None
            ctx.saved_tensors = ()
        backwards = []  # weak references to the node_backward functions below
        for k, o in enumerate(outs):
            if not isinstance(o, Tensor) or not o.dtype.is_floating_point or id(o) in ctx._non_differentiable:
                continue
            if any(o is a for a in args) or o._node is not None:
                with no_grad():
                    o = outs[k] = o.clone()  # a fresh result to hang this function's node on

            def node_backward(g, y, node_inputs, attrs, k=k):
                grads = [None] * len(kinds)
                for j, kind in enumerate(kinds):
                    if j == k:
                        grads[j] = g
                    elif ctx._materialize and kind is not None:
                        grads[j] = zeros(kind[0], dtype=kind[1])
                if saved_outputs:
                    values = list(saved)
                    for i, (j, ref, alias) in saved_outputs.items():
                        live = ref()
                        if j == k:
                            values[i] = y
                        elif live is not None:
                            values[i] = live
                        elif is_grad_enabled():  # create_graph: output j as it was, with its history
                            values[i] = Tensor(alias._h, alias.shape, alias.dtype, True)
                            this = next(f for f in (r() for r in backwards) if f is not None)  # (this one runs)
                            values[i]._node = Node(functools.partial(this, k=j), inputs, None,
                                                   _runtime.current_signal())
                        else:
                            values[i] = alias
                    ctx.saved_tensors = tuple(values)
                _runtime.client().set_grad_location(0)  # your backward's ops carry your lines
                try:
                    result = cls.backward(ctx, *grads)
                finally:
                    if saved_outputs:  # (a node made above refers to ctx: ctx must not refer to it)
                        ctx.saved_tensors = ()
                result = result if isinstance(result, tuple) else (result,)
                if len(result) > len(args) and all(r is None for r in result[len(args):]):
                    result = result[:len(args)]  # extra trailing Nones are allowed, as in PyTorch
                if len(result) != len(args):
                    raise RuntimeError(f"function {cls.__name__}Backward returned an incorrect number of gradients "
                                       f"(expected {len(args)}, got {len(result)})")
                picked = []
                for i in positions:
                    gi = result[i]
                    if gi is not None and tuple(gi.shape) != tuple(args[i].shape):
                        try:  # a gradient of the broadcast shape is summed down to the input's, as PyTorch's
                            gi = gi.sum_to_size(tuple(args[i].shape))
                        except RuntimeError:
                            raise RuntimeError(f"function {cls.__name__}Backward returned an invalid gradient at index "
                                               f"{i} - got {list(gi.shape)} but expected shape compatible with "
                                               f"{list(args[i].shape)}") from None
                    picked.append(gi)
                return tuple(picked)

            # The backward functions, held weakly (each by its output's node): a function referring
            # to itself would be a cycle keeping ctx's tensors until Python's cyclic collector runs.
            backwards.append(weakref.ref(node_backward))
            # (Node.name: GT's own Functions, _LogSoftmax, as PyTorch's ops: LogSoftmaxBackward0)
            node_backward._gt_node_name = cls.__name__.lstrip("_") + "Backward" + ("0" if cls.__name__[:1] == "_" else "")
            o.requires_grad = True
            o._node = Node(node_backward, inputs, None, _runtime.current_signal())
        return outs[0] if single else tuple(outs)


def _accumulate(total, g):
    """total + g, either of them possibly a slice's lazy gradient (gt._derivatives.SliceGrad)."""
    if total is None:
        return g
    if isinstance(total, _derivatives.SliceGrad) or isinstance(g, _derivatives.SliceGrad):
        return _derivatives.SliceGrad.add(total, g)
    return total + g


def _freed(*args):
    raise RuntimeError("Trying to backward through the graph a second time; pass retain_graph=True "
                       "to the first backward() if you need to")


_freed_nodes = {}  # name -> the node standing for every node of that name whose graph was released


def _freed_for(node):
    """The node a tensor's grad_fn becomes once backward released its saved tensors: it raises
    on a second backward and keeps `node`'s name (as PyTorch's grad_fn does). One per name."""
    name = node.name()
    freed = _freed_nodes.get(name)
    if freed is None:
        freed = _freed_nodes[name] = Node(_freed, (), None, None)
        freed.freed_name = name
    return freed


# Ops whose backward formulas read no tensor of the forward pass (gt._ops.READS lists those that
# do) and that PyTorch computes as views or a cat (CatBackward0, SliceBackward0, ViewBackward0,
# PermuteBackward0, ExpandBackward0 save only sizes): a backward without retain_graph leaves
# their nodes in place, so a second backward through them works, as PyTorch's
# (sentence-transformers' Cached* losses: chunk losses of one torch.cat each call backward()).
# Other nodes that save nothing (add, sum, mean) are released as before: keeping one keeps its
# inputs' values too (a GT node holds its input tensors), where PyTorch keeps only sizes.
_SAVE_NOTHING = ("slice", "reshape", "transpose", "broadcast_to", "concat")


def _keep_nodes_that_save_nothing():
    from .._ops import READS, CODES
    for name in _SAVE_NOTHING:
        if CODES[name] not in READS:  # (a formula that starts reading a tensor is released again)
            _C.keep_on_release(formulas[name])


def _register():
    """Tells the client core what its recorded ops make (gt.Tensor and Node: gt._C.record) and
    what its backward pass calls back."""
    from .. import _tensor
    _C.set_record_types(_tensor.Tensor, Node, _runtime)
    _C.set_autograd_types(_tensor.Tensor, _tensor._op, _tensor._scalar_as, _derivatives.SliceGrad)
    _C.set_backward_helpers(_derivatives.materialize, _accumulate, _tensor.cast, _freed_for, _derivatives.SliceGrad)


_register()

from . import profiler  # noqa: E402,F401 (torch.autograd.profiler, imported with torch.autograd as in PyTorch)
from ._gradcheck import gradcheck, gradgradcheck, GradcheckError  # noqa: E402,F401 (torch.autograd.gradcheck)
from . import function  # noqa: E402,F401 (torch.autograd.function.once_differentiable)
from . import graph  # noqa: E402,F401 (torch.autograd.graph)
from . import forward_ad  # noqa: E402 (torch.autograd.forward_ad; Function.apply asks it)


class _VariableMeta(type):
    def __instancecheck__(cls, obj):  # every tensor is a Variable, as in PyTorch (torchviz asks)
        from .._tensor import Tensor
        return isinstance(obj, Tensor)


class Variable(metaclass=_VariableMeta):
    """torch.autograd.Variable, PyTorch's old wrapper: Variable(t) is a new leaf on t's values
    (t.detach(), requiring grad when asked; t itself is left as it is), as since PyTorch 0.4, and
    isinstance(t, Variable) holds for every tensor."""

    def __new__(cls, data, requires_grad=False, volatile=False):
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out
