"""Names of PyTorch that libraries import or call, and what each is in GT (installed into gt and
its modules by install(), from gt/__init__.py). Found by running kornia, PyTorch Geometric,
captum, opacus, gpytorch, pyro, fastai, torchdiffeq and skorch on GT: each of these stopped an
import or a common call path.

Working functions: the functional convolutions and pools as torch.conv2d & co. (PyTorch has
them at the top level), `_assert_async` (a deferred check, read at the next wait for values,
as CUDA's device-side asserts), `_segment_reduce`, `nextafter`, `Tensor.sum_to_size`,
`Tensor.is_inference` (False: GT has no inference tensors), `torch.futures` (Future,
collect_all, wait_all: completed in this process), `torch.utils.dlpack` (through NumPy),
`torch.nn.modules.utils` (_single, _pair, _triple, _quadruple, _ntuple), scatter/gather of
`torch.nn.parallel.scatter_gather` (one device: the inputs as they are), `func.linearize`,
`torch._utils._flatten_dense_tensors` / `_unflatten_dense_tensors`, `WeightedRandomSampler`.

Names that exist for imports, isinstance checks and annotations only, each saying so:
layouts (`torch.strided`, `sparse_coo`, ...: every GT tensor is strided, gt.sparse's too),
`SymInt`/`SymFloat`/`SymBool` (no value is one: GT's shapes are ints), `torch.__config__`,
`backends.mkldnn` (not used: is_available() False), `torch._subclasses.fake_tensor`
(is_fake() False), `torch.fx.experimental.proxy_tensor` (no proxy mode), `torch.ops.aten`
(GT's functions by ATen's names, `.default` overloads), `jit._overload`,
`jit.script_if_tracing`, `torch.types`, `torch.distributed.rpc` and FSDP's modules (one process:
is_available() False, making one raises), `torch.amp.grad_scaler.OptState`,
`torch._tensor_str.PRINT_OPTS`, `serialization.MAP_LOCATION`.
"""
import enum
import sys
import types

import numpy as np


def _module(name, doc, **names):
    """A module `name` (gt.X.Y) holding `names`, registered so that `import torch.X.Y` finds it."""
    module = types.ModuleType(name, doc)
    module.__dict__.update(names)
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, module)
    return module


class _NoValueIsOne(type):
    def __instancecheck__(cls, obj):
        return False


class SymInt(metaclass=_NoValueIsOne):
    """torch.SymInt (a symbolic size under tracing): no value is one in GT, whose shapes are
    ints; exists for isinstance checks and annotations."""


class SymFloat(metaclass=_NoValueIsOne):
    """torch.SymFloat: see SymInt."""


class SymBool(metaclass=_NoValueIsOne):
    """torch.SymBool: see SymInt."""


class layout:
    """torch.layout: how a tensor's elements are stored. Every GT tensor is `strided` (dense;
    gt.sparse stores sparse tensors densely too, docs/api.md)."""

    def __init__(self, name):
        self._name = name

    def __repr__(self):
        from . import dtypes as _dt
        return f"{_dt.package[0]}.{self._name}"

    def __reduce__(self):
        return (getattr, (sys.modules["gt"], self._name))


_LAYOUTS = ("strided", "sparse_coo", "sparse_csr", "sparse_csc", "sparse_bsr", "sparse_bsc", "_mkldnn", "jagged")


def _assert_async(condition, message=None):
    """Raises RuntimeError at the next wait for values (numpy(), item(), synchronize) if the
    one-element `condition` is False, as torch._assert_async (CUDA's device-side assert)."""
    from . import _tensor as T
    cond = condition if isinstance(condition, T.Tensor) else T.tensor(bool(condition))
    if cond.numel() != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    text = message or "Expected Tensor with single nonzero value, but got zero"
    T.defer_check(T.cast(cond, sys.modules["gt"].bool) if cond.dtype != sys.modules["gt"].bool else cond,
                  lambda: text)


def _assert(condition, message):
    """Raises AssertionError(message) if `condition` (a bool or a one-element tensor: its value
    read, a wait) is false, as torch._assert."""
    if not bool(condition):
        raise AssertionError(message)


def _segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False, initial=None):
    """torch._segment_reduce: `data` reduced ("sum", "mean", "max" or "amax", "min" or "amin";
    "prod" not supported) over consecutive segments along `axis`, given by `lengths` (or `offsets`, their
    boundaries), as PyTorch's. An empty segment gives `initial`, or 0 for sum, NaN for mean,
    -inf/inf for max/min (PyTorch's)."""
    import gt
    if lengths is None:
        if offsets is None:
            raise RuntimeError("segment_reduce: lengths or offsets must be given")
        lengths = offsets[..., 1:] - offsets[..., :-1]
    if lengths.ndim != 1:
        raise NotImplementedError("segment_reduce: GT takes 1-D lengths or offsets")
    x = data.movedim(axis, 0)
    n = lengths.shape[0]
    ids = gt.repeat_interleave(gt.arange(n), lengths, output_size=x.shape[0])
    index = ids.reshape((-1,) + (1,) * (x.ndim - 1)).expand(x.shape)
    kind = {"sum": "sum", "mean": "mean", "max": "amax", "min": "amin", "amax": "amax", "amin": "amin"}.get(reduce)
    if kind is None:
        raise NotImplementedError(f"segment_reduce: reduce={reduce!r} is not supported by GT")
    empty = {"sum": 0.0, "mean": float("nan"), "amax": float("-inf"), "amin": float("inf")}[kind]
    fill = empty if initial is None else initial
    base = gt.full((n,) + tuple(x.shape[1:]), fill, dtype=x.dtype)
    out = base.scatter_reduce(0, index, x, kind, include_self=initial is not None and reduce != "mean")
    return out.movedim(0, axis)


def nextafter(input, other):
    """The next float after `input` toward `other`, elementwise (NumPy's nextafter of the values,
    in input's dtype), as torch.nextafter."""
    import gt
    a, b = np.broadcast_arrays(np.asarray(input.numpy()), np.asarray(gt.as_tensor(other).numpy()).astype(input.numpy().dtype))
    return gt.from_numpy(np.asarray(np.nextafter(a, b), dtype=a.dtype))  # (a 0-d array stays an array)


def sum_to_size(x, *size):
    """x summed over the axes where `size` has 1 (or lacks them, in front): the inverse of
    expand, as torch.Tensor.sum_to_size. Raises RuntimeError if x does not expand from size."""
    import gt
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else tuple(size)
    lead = x.ndim - len(size)
    if lead < 0 or any(s not in (1, n) for s, n in zip(size, x.shape[lead:])):
        raise RuntimeError(f"size {list(size)} is not expandable to size {list(x.shape)}.")
    out = x.sum(tuple(range(lead))) if lead else x
    dims = tuple(i for i, (s, n) in enumerate(zip(size, out.shape)) if s == 1 and n != 1)
    return out.sum(dims, keepdim=True) if dims else gt.reshape(out, size) if out.shape != size else out


class Future:
    """torch.futures.Future, completed in this process: set_result / set_exception, wait() and
    value() (its result, or raise what was set), done(), then(fn) (a Future of fn(self)),
    add_done_callback(fn)."""

    def __init__(self, *, devices=None):
        self._done, self._result, self._error, self._callbacks = False, None, None, []

    def set_result(self, result):
        self._done, self._result = True, result
        for fn in self._callbacks:
            fn(self)
        self._callbacks = []

    def set_exception(self, error):
        self._done, self._error = True, error
        for fn in self._callbacks:
            fn(self)
        self._callbacks = []

    def done(self):
        return self._done

    def wait(self):
        if not self._done:
            raise RuntimeError("Future.wait: the future has no result (GT completes futures in this process)")
        if self._error is not None:
            raise self._error
        return self._result

    value = wait

    def then(self, callback):
        out = Future()

        def run(fut):
            try:
                out.set_result(callback(fut))
            except Exception as e:  # (the chained future carries the error, as PyTorch's)
                out.set_exception(e)
        self.add_done_callback(run)
        return out

    def add_done_callback(self, callback):
        if self._done:
            callback(self)
        else:
            self._callbacks.append(callback)


def collect_all(futures):
    """A Future of the list of `futures`, done when all of them are."""
    out = Future()
    out.set_result(list(futures))
    return out


def wait_all(futures):
    """The results of `futures`, in order."""
    return [f.wait() for f in futures]


def _flatten_dense_tensors(tensors):
    """The tensors flattened and concatenated into one 1-D tensor (torch._utils')."""
    import gt
    return gt.cat([t.reshape(-1) for t in tensors]) if tensors else gt.zeros(0)


def _unflatten_dense_tensors(flat, tensors):
    """Views of `flat` with the shapes of `tensors`, in order (torch._utils')."""
    out, offset = [], 0
    for t in tensors:
        n = t.numel()
        out.append(flat[offset:offset + n].reshape(t.shape))
        offset += n
    return tuple(out)


def _ntuple(n, name="parse"):
    """A function making an n-tuple of one value (or a tuple of an iterable), as
    torch.nn.modules.utils._ntuple."""
    def parse(x):
        if isinstance(x, (list, tuple)) or hasattr(x, "__iter__") and not isinstance(x, str):
            return tuple(x)
        return (x,) * n
    parse.__name__ = name
    return parse


def _reverse_repeat_tuple(t, n):
    """Each element of t repeated n times, in reversed order (F.pad's argument from a padding)."""
    return tuple(x for x in reversed(t) for _ in range(n))


class OptState(enum.Enum):
    """torch.amp.grad_scaler.OptState: where an optimizer is in GradScaler's step."""
    READY = 0
    UNSCALED = 1
    STEPPED = 2


class _AtenOp:
    """torch.ops.aten.<name>: GT's function of that name, with `.default` (and any overload
    name) the same function; an ATen op GT has no function for exists (libraries key tables by
    them: PyG's Index) and raises NotImplementedError when called."""

    def __init__(self, fn, name):
        self._fn, self._name = fn, name

    def __call__(self, *args, **kwargs):
        if self._fn is None:
            raise NotImplementedError(f"torch.ops.aten.{self._name}: GT has no function of that name")
        return self._fn(*args, **kwargs)

    def __getattr__(self, overload):
        if overload.startswith("__"):
            raise AttributeError(overload)
        return self._fn if self._fn is not None else self


class _Aten(types.ModuleType):
    def __getattr__(self, name):
        import gt
        if name.startswith("__"):
            raise AttributeError(name)
        fn = getattr(gt, name, None) or getattr(gt.nn.functional, name, None)
        return _AtenOp(fn if callable(fn) else None, name)


class WeightedRandomSampler:
    """torch.utils.data.WeightedRandomSampler: `num_samples` indices drawn with probabilities
    proportional to `weights` (with or without replacement), from `generator` or gt's stream."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        import gt
        self.weights = gt.as_tensor(weights, dtype=gt.float64)
        if self.weights.ndim != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(self.weights.shape)}")
        self.num_samples, self.replacement, self.generator = num_samples, replacement, generator

    def __iter__(self):
        import gt
        drawn = gt.multinomial(self.weights, self.num_samples, self.replacement, generator=self.generator)
        yield from drawn.tolist()

    def __len__(self):
        return self.num_samples


def linearize(func, *primals):
    """(func(*primals), jvp_fn): jvp_fn(*tangents) is the Jacobian-vector product at primals,
    as torch.func.linearize (each call runs func's forward mode again: gt.func.jvp)."""
    from . import func as _func
    out = func(*primals)
    return out, lambda *tangents: _func.jvp(func, primals, tangents)[1]


def _unavailable(what):
    def make(*args, **kwargs):
        raise NotImplementedError(f"{what}: GT runs one process per script (torch.distributed is a facade)")
    make.__doc__ = f"{what}: raises NotImplementedError (GT runs one process per script)."
    return make


def install(gt):
    """Adds the names above to gt and its modules (see the module's docstring)."""
    F = gt.nn.functional
    for name in ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                 "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "adaptive_avg_pool1d", "adaptive_max_pool1d",
                 "batch_norm", "layer_norm", "group_norm", "instance_norm", "dropout", "embedding", "pixel_shuffle",
                 "pixel_unshuffle", "pdist", "cosine_similarity", "pairwise_distance", "bilinear", "prelu", "selu",
                 "celu", "rrelu", "hardshrink", "alpha_dropout", "feature_alpha_dropout", "poisson_nll_loss"):
        if not hasattr(gt, name) and hasattr(F, name):
            setattr(gt, name, getattr(F, name))
    gt.torch = gt  # (torch.torch is torch)
    gt.SymInt, gt.SymFloat, gt.SymBool = SymInt, SymFloat, SymBool
    gt.layout = layout
    for name in _LAYOUTS:
        setattr(gt, name, layout(name))
    gt.Tensor.layout = property(lambda self: gt.strided, doc="torch.strided: GT's tensors are dense (gt.sparse too)")
    gt.Tensor.is_inference = lambda self: False
    gt.Tensor.sum_to_size = sum_to_size
    gt.is_inference = lambda input: False
    gt._assert, gt._assert_async, gt._segment_reduce, gt.nextafter = _assert, _assert_async, _segment_reduce, nextafter
    gt.Tensor.nextafter = nextafter
    gt.ops.aten = _Aten("torch.ops.aten", "ATen's operators by name: GT's functions")
    _module("gt.__config__", "torch.__config__: what the build has.", show=lambda: f"GT {gt.__version__} (no PyTorch build)",
            parallel_info=lambda: "GT: ops run on the session's workers")
    gt.__config__ = sys.modules["gt.__config__"]
    gt.Future = Future
    _module("gt.futures", "torch.futures: Future, collect_all, wait_all (completed in this process).",
            Future=Future, collect_all=collect_all, wait_all=wait_all)
    _module("gt.types", "torch.types: the type aliases annotations use.", Number=(int, float, bool), _int=int,
            _float=float, _bool=bool, _size=tuple, _dtype=gt.dtype, _device=gt.device, Device=object, _TensorOrTensors=object)
    import contextlib
    from . import _tensor as T

    @contextlib.contextmanager
    def printoptions(**kwargs):
        """torch._tensor_str.printoptions: set_printoptions(**kwargs) within the block."""
        old = T.get_printoptions()
        T.set_printoptions(**kwargs)
        try:
            yield
        finally:
            T.set_printoptions(**old)

    def _tensor_str(self, indent):
        """The values part of a tensor's printing (torch._tensor_str's helper: PyG writes OFF files with it)."""
        return np.array2string(self.numpy(), separator=", ", precision=4, prefix=" " * indent)

    _module("gt._tensor_str", "torch._tensor_str: PRINT_OPTS (what gt.set_printoptions sets), printoptions, _tensor_str.",
            PRINT_OPTS=T.PRINT_OPTS, _tensor_str=_tensor_str, printoptions=printoptions,
            get_printoptions=T.get_printoptions, set_printoptions=T.set_printoptions)

    def to_dlpack(t):
        return t.numpy().__dlpack__()

    def from_dlpack(ext):
        return gt.from_numpy(np.from_dlpack(ext).copy())

    _module("gt.utils.dlpack", "torch.utils.dlpack through NumPy (from_dlpack copies the values to the workers).",
            to_dlpack=to_dlpack, from_dlpack=from_dlpack)
    gt.from_dlpack = from_dlpack
    _module("gt._utils", "torch._utils' helpers libraries call.", _flatten_dense_tensors=_flatten_dense_tensors,
            _unflatten_dense_tensors=_unflatten_dense_tensors)
    # torch.nn
    _module("gt.nn.modules.utils", "torch.nn.modules.utils: tuple helpers of the conv and pool modules.",
            _single=_ntuple(1, "_single"), _pair=_ntuple(2, "_pair"), _triple=_ntuple(3, "_triple"),
            _quadruple=_ntuple(4, "_quadruple"), _ntuple=_ntuple, _reverse_repeat_tuple=_reverse_repeat_tuple)
    parallel = sys.modules["gt.nn.parallel"]

    def scatter(inputs, target_gpus, dim=0):
        return [inputs]

    def gather(outputs, target_device, dim=0):
        return outputs[0] if isinstance(outputs, (list, tuple)) and len(outputs) == 1 else outputs

    def scatter_kwargs(inputs, kwargs, target_gpus, dim=0):
        return (tuple(inputs),), (dict(kwargs or {}),)

    _module("gt.nn.parallel.scatter_gather", "torch.nn.parallel.scatter_gather: one device (GT's workers are "
            "behind one session), so scatter and gather hand the inputs back.", scatter=scatter, gather=gather,
            scatter_kwargs=scatter_kwargs)
    parallel.scatter, parallel.gather = scatter, gather
    if not hasattr(gt.nn, "RNNBase"):
        gt.nn.RNNBase, gt.nn.RNNCellBase = gt.nn.modules.rnn.RNNBase, gt.nn.modules.rnn.RNNCellBase
    # torch.backends.mkldnn, torch._subclasses, torch.fx.experimental
    _module("gt.backends.mkldnn", "torch.backends.mkldnn: GT does not use oneDNN.", is_available=lambda: False,
            enabled=False, flags=lambda *a, **k: _nullcontext())
    _module("gt._subclasses", "torch._subclasses (no fake tensors in GT; meta tensors are gt's).")
    _module("gt._subclasses.fake_tensor", "torch._subclasses.fake_tensor: GT makes no fake tensors.",
            is_fake=lambda x: False, FakeTensor=type("FakeTensor", (gt.Tensor,), {
                "__module__": "gt", "__torch_function__": gt._C._disabled_torch_function_impl}),
            FakeTensorMode=_unavailable("FakeTensorMode"))
    fx = sys.modules["gt.fx"]
    fx.__path__ = []
    _module("gt.fx.experimental", "torch.fx.experimental (no tracing in GT).")
    _module("gt.fx.experimental.proxy_tensor", "torch.fx.experimental.proxy_tensor: GT does not trace.",
            get_proxy_mode=lambda: None, make_fx=_unavailable("make_fx"))
    # torch.jit, torch.serialization
    gt.jit._overload = gt.jit._overload_method = lambda fn: fn
    gt.jit.script_if_tracing = lambda fn: fn
    gt.serialization.MAP_LOCATION = object
    # torch.distributed: rpc, FSDP and the experimental tensor modules (one process)
    dist = gt.distributed
    _module("gt.distributed.rpc", "torch.distributed.rpc: not available (one process).", is_available=lambda: False,
            init_rpc=_unavailable("rpc.init_rpc"), RRef=type("RRef", (), {}))
    _module("gt.distributed.optim", "torch.distributed.optim: optimizers over process groups (none: one process).",
            ZeroRedundancyOptimizer=type("ZeroRedundancyOptimizer", (gt.optim.Optimizer,), {
                "__init__": _unavailable("ZeroRedundancyOptimizer"), "__module__": "gt.distributed.optim"}),
            DistributedOptimizer=type("DistributedOptimizer", (), {
                "__init__": _unavailable("DistributedOptimizer"), "__module__": "gt.distributed.optim"}))
    fsdp = _module("gt.distributed.fsdp", "torch.distributed.fsdp: FSDP names for imports (one process).",
                   fully_shard=_unavailable("fully_shard"), FSDPModule=type("FSDPModule", (), {}),
                   FullyShardedDataParallel=type("FullyShardedDataParallel", (), {}),
                   MixedPrecisionPolicy=type("MixedPrecisionPolicy", (), {}),
                   MixedPrecision=type("MixedPrecision", (), {}), ShardingStrategy=enum.Enum("ShardingStrategy", "FULL_SHARD SHARD_GRAD_OP NO_SHARD HYBRID_SHARD"))
    fsdp.__path__ = []
    _module("gt.distributed._composable", "torch.distributed._composable (one process).").__path__ = []
    _module("gt.distributed._composable.fsdp", "torch.distributed._composable.fsdp (one process).",
            fully_shard=fsdp.fully_shard, FSDPModule=fsdp.FSDPModule, MixedPrecisionPolicy=fsdp.MixedPrecisionPolicy)
    _module("gt.distributed._tensor", "torch.distributed._tensor: DTensor (none in GT).",
            DTensor=dist.tensor.DTensor).__path__ = []
    _module("gt.distributed._tensor.experimental", "torch.distributed._tensor.experimental (no DTensors).",
            implicit_replication=_nullcontext)
    # torch.utils.data: private modules, WeightedRandomSampler
    data = gt.utils.data
    data.WeightedRandomSampler = WeightedRandomSampler
    from .utils.data import sampler as _sampler
    _sampler.WeightedRandomSampler = WeightedRandomSampler
    data.sampler = _sampler
    utils_mod = _module("gt.utils.data._utils", "torch.utils.data._utils.")
    utils_mod.__path__ = []

    def default_convert(data_):
        """NumPy arrays (not of strings) as tensors, inside lists, tuples and dicts, as
        torch.utils.data._utils.collate.default_convert."""
        if isinstance(data_, np.ndarray) and data_.dtype.kind not in "SUO":
            return gt.as_tensor(data_)
        if isinstance(data_, dict):
            return type(data_)({k: default_convert(v) for k, v in data_.items()})
        if isinstance(data_, tuple) and hasattr(data_, "_fields"):
            return type(data_)(*(default_convert(v) for v in data_))
        if isinstance(data_, (list, tuple)):
            return type(data_)(default_convert(v) for v in data_)
        return data_

    import re
    _module("gt.utils.data._utils.collate", "torch.utils.data._utils.collate.", default_collate=data.default_collate,
            default_convert=default_convert, np_str_obj_array_pattern=re.compile(r"[SaUO]"), collate=data.collate,
            default_collate_fn_map=data.default_collate_fn_map,
            **{n: getattr(data, n) for n in ("collate_tensor_fn", "collate_numpy_array_fn", "collate_numpy_scalar_fn",
                                              "collate_float_fn", "collate_int_fn", "collate_str_fn")})
    _module("gt.utils.model_zoo", "torch.utils.model_zoo: load_url is gt.hub.load_state_dict_from_url.",
            load_url=gt.hub.load_state_dict_from_url)
    gt.serialization.DEFAULT_PROTOCOL = 2  # (torch.save's pickle protocol)
    data.default_convert = default_convert
    from .utils.data import dataloader as _dataloader
    _dataloader._collate_fn_t = object
    _dataloader.default_convert = default_convert
    # torch.amp, torch.optim, torch.func, nn.utils
    _module("gt.amp.grad_scaler", "torch.amp.grad_scaler.", GradScaler=gt.amp.GradScaler, OptState=OptState)
    lr = gt.optim.lr_scheduler
    if not hasattr(lr, "_LRScheduler"):
        lr._LRScheduler = lr.LRScheduler
    from . import func as _func
    _func.linearize = linearize
    _install_more(gt)


def _unsupported(what, why):
    """A class for imports whose construction raises NotImplementedError naming `why`."""
    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"{what}: {why}")
    return type(what.rpartition(".")[2], (), {"__init__": __init__, "__doc__": f"{what}: {why}"})


def _install_more(gt):
    """Names sentence-transformers, thop, ptflops, fvcore and botorch import (see each)."""
    import importlib
    importlib.import_module("gt._dynamo")  # torch._dynamo as an attribute (PyTorch loads it lazily)
    gt.nn.modules.module._EXTRA_STATE_KEY_SUFFIX = "_extra_state"
    checkpoint = importlib.import_module("gt.utils.checkpoint")
    # (no per-device random states: a session's workers draw from their own generators)
    checkpoint.get_device_states = lambda *args: ([], [])
    checkpoint.set_device_states = lambda devices, states, *, device_type=None: None

    class TensorType:
        """torch.TensorType (TorchScript's type of tensors): a name for annotations (open_clip's
        hf_model imports it); GT has no TorchScript types."""
    gt.TensorType = TensorType
    gt.DeviceObjType = gt.device  # (TorchScript's type of devices: pytorch-forecasting annotates with it)

    def symeig(input, eigenvectors=False, upper=True, *, out=None):
        """Raises RuntimeError, as PyTorch's (removed in 1.9): use gt.linalg.eigh / eigvalsh."""
        raise RuntimeError("This function was deprecated since version 1.9 and is now removed. Please use the "
                           "`torch.linalg.eigh` function instead (L, V = torch.linalg.eigh(A, UPLO='U' if upper else "
                           "'L')).")
    gt.symeig = symeig

    def put(input, index, source, accumulate=False):
        """input with source's values at the flat positions `index` (summed in with accumulate),
        as torch.put: input, index and source of any shapes, index and source of as many
        elements."""
        flat = gt.index_put(input.reshape(-1), (index.reshape(-1),), source.reshape(-1), accumulate)
        return flat.reshape(input.shape)

    def put_(self, index, source, accumulate=False):
        """In place: self = put(self, index, source, accumulate)."""
        return self._in_place(put, index, source, accumulate)
    gt.put, gt.Tensor.put, gt.Tensor.put_ = put, put, put_

    class TorchDispatchMode:
        """torch.utils._python_dispatch.TorchDispatchMode: GT has no dispatcher below its
        functions, so entering one raises NotImplementedError (a FLOP counter built on it would
        count nothing; torch.overrides.TorchFunctionMode sees every function call instead)."""

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            raise NotImplementedError

        def __enter__(self):
            raise NotImplementedError("TorchDispatchMode: GT has no dispatcher-level modes (use "
                                      "torch.overrides.TorchFunctionMode)")

        def __exit__(self, *exc):
            return False

    _module("gt.utils._python_dispatch", "torch.utils._python_dispatch: TorchDispatchMode (GT has no dispatcher).",
            TorchDispatchMode=TorchDispatchMode, _get_current_dispatch_mode=lambda: None,
            is_traceable_wrapper_subclass=lambda t: False)
    ops = importlib.import_module("gt.vision.ops")
    ops.DeformConv2d = _unsupported("torchvision.ops.DeformConv2d", "deformable convolution is not in GT")

    def deform_conv2d(*args, **kwargs):
        raise NotImplementedError("torchvision.ops.deform_conv2d: deformable convolution is not in GT")
    ops.deform_conv2d = deform_conv2d

    class QuantStub(gt.nn.Module):
        """torch.ao.quantization.QuantStub: the identity until a model is quantized (GT never
        quantizes: it stays the identity)."""

        def __init__(self, qconfig=None):
            super().__init__()

        def forward(self, x):
            return x

    class DeQuantStub(QuantStub):
        """torch.ao.quantization.DeQuantStub: the identity (see QuantStub)."""

    _module("gt.ao", "torch.ao (GT does not quantize).").__path__ = []
    _module("gt.ao.quantization", "torch.ao.quantization: QuantStub / DeQuantStub, the identity (GT does not "
            "quantize).", QuantStub=QuantStub, DeQuantStub=DeQuantStub)

    def _get_trace_graph(*args, **kwargs):
        raise NotImplementedError("torch.jit._get_trace_graph: GT does not trace (no TorchScript graphs)")
    gt.jit._get_trace_graph = _get_trace_graph
    gt._C.Graph = type("Graph", (), {"__doc__": "torch._C.Graph: no GT object is one (GT does not trace)."})
    for name in ("FractionalMaxPool2d", "FractionalMaxPool3d"):
        if not hasattr(gt.nn, name):
            setattr(gt.nn, name, _unsupported(f"torch.nn.{name}", "fractional max pooling is not in GT"))
    # torch.optim.<file>: each optimizer's own module, as PyTorch's (`from torch.optim.adam import Adam`;
    # torch.optim.optimizer is gt/optim/optimizer.py, with `required`)
    files = {"adam": "Adam", "adamw": "AdamW", "sgd": "SGD", "rmsprop": "RMSprop",
             "adagrad": "Adagrad", "adadelta": "Adadelta", "adamax": "Adamax", "nadam": "NAdam", "radam": "RAdam",
             "asgd": "ASGD", "lbfgs": "LBFGS", "rprop": "Rprop", "sparse_adam": "SparseAdam"}
    for file, name in files.items():
        if hasattr(gt.optim, name) and f"gt.optim.{file}" not in sys.modules:
            _module(f"gt.optim.{file}", f"torch.optim.{file}: {name}.", **{name: getattr(gt.optim, name),
                                                                            "Optimizer": gt.optim.Optimizer})
    def dsmm(input, mat2):
        """torch.dsmm: a sparse (n, m) times a dense (m, p) matrix, dense (n, p): gt.mm (GT stores
        sparse tensors densely)."""
        return gt.mm(input, mat2)
    gt.dsmm = dsmm
    gt.quasirandom = importlib.import_module("gt.quasirandom")


class _nullcontext:
    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
