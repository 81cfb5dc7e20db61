"""nn.Module and the layers built on it (torch.nn's API)."""
import inspect
import math
import typing
import weakref
from collections import OrderedDict, namedtuple

import numpy as np

from .. import _functions as T
from .. import _device
from .. import dtypes as _dt
from .. import autograd as _ag
from .._tensor import _disabled_torch_function_impl
from .. import overrides as _overrides
from .. import _runtime
from ..autograd import no_grad
from .. import signal as _signal
from . import functional as F
from . import init
from .. import _C
from .. import _complex



_TABLES = ("_parameters", "_buffers", "_modules")


class _Table(OrderedDict):
    """A module's _parameters, _buffers or _modules. GT keeps each entry as an ordinary
    attribute of the module too (reading module.weight costs no __getattr__ call), so a write
    or a deletion here updates that attribute: `module._parameters["weight"] = p` (as
    accelerate and diffusers load weights) changes what module.weight and forward() see, as
    PyTorch's. Pickles as an OrderedDict (Module.__setstate__ makes it a table again)."""

    def __init__(self, owner, items=()):
        self._owner = weakref.ref(owner)
        super().__init__(items)

    def __setitem__(self, key, value):
        OrderedDict.__setitem__(self, key, value)
        owner = self._owner()
        if owner is not None:
            object.__setattr__(owner, key, value)

    def __delitem__(self, key):
        OrderedDict.__delitem__(self, key)
        owner = self._owner()
        if owner is not None:
            owner.__dict__.pop(key, None)

    def pop(self, key, *default):
        if key in self:
            value = self[key]
            del self[key]
            return value
        if default:
            return default[0]
        raise KeyError(key)

    def popitem(self, last=True):
        key = next(reversed(self)) if last else next(iter(self))
        return key, self.pop(key)

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, *args, **kwargs):
        for key, value in dict(*args, **kwargs).items():
            self[key] = value

    def clear(self):
        for key in list(self):
            del self[key]

    def __reduce__(self):
        return OrderedDict, (list(self.items()),)

    def copy(self):
        return OrderedDict(self)


class Parameter(T.Tensor):
    """A tensor that a Module registers as trainable (requires_grad=True). It remembers the
    signals active when it was made (gt.signal), so gt.nn.init refills it with the same layout."""
    __slots__ = ("_signals",)
    __torch_function__ = _disabled_torch_function_impl  # ops on it give plain tensors, as PyTorch's

    def __new__(cls, *args, **kwargs):
        data = args[0] if args else kwargs.get("data")
        if _complex.is_complex_tensor(data) and not issubclass(cls, ComplexParameter):
            cls = ComplexParameter  # nn.Parameter(complex tensor)
        return super().__new__(cls)

    def __init__(self, data=None, requires_grad=True):
        if data is None:
            data = T.zeros(0)
        super().__init__(data._h, data.shape, data.dtype, requires_grad)
        self._signals = _signal._snapshot()

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


class ComplexParameter(_complex.ComplexTensor, Parameter):
    """nn.Parameter of a complex tensor (what Parameter(z) makes): its real and imaginary
    parts are two leaves that require grad; optimizers step them (gt.optim)."""
    __slots__ = ()

    def __init__(self, data=None, requires_grad=True):
        _complex.ComplexTensor.__init__(self, data.real.detach(), data.imag.detach())
        self.requires_grad_(requires_grad)
        self._signals = _signal._snapshot()

    def __repr__(self):
        return "Parameter containing:\n" + _complex.ComplexTensor.__repr__(self)


class Buffer(T.Tensor):
    """torch.nn.Buffer (PyTorch 2.5): a tensor that, assigned to a Module's attribute, is
    registered as a buffer (persistent: saved in state_dict), as register_buffer does."""
    __slots__ = ("persistent",)
    __torch_function__ = _disabled_torch_function_impl  # ops on it give plain tensors, as PyTorch's

    def __init__(self, data=None, *, persistent=True):
        if data is None:
            data = T.zeros(0)
        super().__init__(data._h, data.shape, data.dtype, False)
        self.persistent = persistent


class UninitializedParameter(Parameter):
    """A parameter whose shape is not known yet (the lazy modules', gt.nn.LazyLinear...):
    `materialize(shape)` gives it zeros of that shape in place, and the same object becomes a
    Parameter, so an optimizer made before the first forward pass trains it. Until then it
    holds no values (a 0-element tensor) and ops on it fail."""
    __slots__ = ()
    cls_to_become = Parameter

    def __init__(self, requires_grad=True, device=None, dtype=None):
        super().__init__(T.zeros(0, dtype=dtype), requires_grad)

    def materialize(self, shape, device=None, dtype=None):
        _materialize(self, shape, dtype)

    def __repr__(self):
        return "<UninitializedParameter>"


class UninitializedBuffer(T.Tensor):
    """A buffer whose shape is not known yet (lazy batch norms' running statistics):
    `materialize(shape)` makes it zeros of that shape in place, a plain Tensor from then on."""
    __slots__ = ()
    __torch_function__ = _disabled_torch_function_impl  # ops on it give plain tensors, as PyTorch's
    cls_to_become = T.Tensor

    def __init__(self, requires_grad=False, device=None, dtype=None):
        t = T.zeros(0, dtype=dtype)
        super().__init__(t._h, t.shape, t.dtype, requires_grad)

    def materialize(self, shape, device=None, dtype=None):
        _materialize(self, shape, dtype)

    def __repr__(self):
        return "<UninitializedBuffer>"


def _materialize(t, shape, dtype):
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    values = T.zeros(*shape, dtype=dtype or t.dtype)
    t._h, t.shape, t.dtype = values._h, values.shape, values.dtype
    t.__class__ = t.cls_to_become


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What load_state_dict returns: (missing_keys, unexpected_keys), as PyTorch's."""
    __slots__ = ()

    def __repr__(self):
        return "<All keys matched successfully>" if not self.missing_keys and not self.unexpected_keys else \
            super().__repr__()

    __str__ = __repr__


class _Parameters(list):
    """Module.parameters() (and buffers(), modules(), children(), named_children()): walked once,
    as the generator PyTorch returns (`next()` takes the next item; a second loop over the same
    object finds nothing, which scripts rely on: dreamer passes one parameters() to
    clip_grad_norm_ and then to a weight-decay loop that PyTorch never runs), and a list
    otherwise (len, indexing, and the original GT's a.parameters() + b.parameters())."""
    __slots__ = ("_at",)

    def __iter__(self):
        return self

    def __next__(self):
        at = getattr(self, "_at", 0)
        if at >= len(self):
            raise StopIteration
        self._at = at + 1
        return self[at]


class _BackwardHookState:
    """One call's gradients for a module's full backward hooks."""
    __slots__ = ("module", "hooks", "inputs", "grad_output", "grad_input", "pending")


def _watch_inputs(module, args, hooks):
    """Passes each tensor input that requires grad through an identity node whose gradient
    completes grad_input: the hooks run when the last of them arrives. Returns (args, state)."""
    state = _BackwardHookState()
    state.module, state.hooks, state.grad_output = module, hooks, None
    new_args, state.inputs = [], []
    for a in args:
        if isinstance(a, T.Tensor) and a.requires_grad and _ag.is_grad_enabled():
            b = T.Tensor(a._h, a.shape, a.dtype)
            b.requires_grad = True
            b._node = _ag.Node(_ag.identity_backward, (a,), None, _runtime.current_signal())
            b._made_now(a)
            state.inputs.append(b)
            new_args.append(b)
        else:
            new_args.append(a)
    state.grad_input, state.pending = [], 0  # (set when the output's gradient arrives)
    for i, b in enumerate(state.inputs):
        b.register_hook(lambda g, i=i: _input_grad(state, i, g))
    return tuple(new_args), state


def _watch_output(out, state):
    """Records the output's gradient; with no input that needs a gradient the hooks run then.
    Returns the output: an identity node of it when forward returned an input as it was
    (nn.Identity, Dropout in eval), so that its gradient arrives before the input's."""
    if not isinstance(out, T.Tensor):
        raise NotImplementedError(f"{type(state.module).__name__}: full backward hooks are supported for modules "
                                  f"whose forward returns one tensor")
    if not out.requires_grad:
        return out
    if any(out is b for b in state.inputs):
        passed = out
        out = T.Tensor(passed._h, passed.shape, passed.dtype)
        out.requires_grad = True
        out._node = _ag.Node(_ag.identity_backward, (passed,), None, _runtime.current_signal())
        out._made_now(passed)

    def output_grad(g):  # each backward pass through this call reaches the output first
        state.grad_output = g
        state.grad_input = [None] * len(state.inputs)
        state.pending = len(state.inputs)
        if not state.inputs:
            _run_backward_hooks(state, (None,))

    out.register_hook(output_grad)
    return out


def _input_grad(state, i, g):
    state.grad_input[i] = g
    state.pending -= 1
    if state.pending == 0:
        changed = _run_backward_hooks(state, tuple(state.grad_input))
        if changed is not None:
            return changed[i]
    return None


def _run_backward_hooks(state, grad_input):
    changed = None
    for hook in state.hooks:
        out = hook(state.module, grad_input if changed is None else changed, (state.grad_output,))
        if out is not None:
            changed = tuple(out)
    return changed


class Module:
    """Base class: assigning a Parameter or a Module to an attribute registers it;
    register_buffer registers a tensor that is saved in state_dict but not trained."""

    _version = 1  # (PyTorch's: the version of a module class's state-dict layout)
    # (annotated as PyTorch's Module: typing.get_type_hints(a module) works, as fastai's losses call it)
    training: bool
    _parameters: dict
    _buffers: dict
    _modules: dict

    def __init_subclass__(cls, **kwargs):
        """GT's modules that take `device=` make meta parameters for device="meta"
        (gt._device.factory_device)."""
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is not None and cls.__module__.startswith("gt.") and "device" in inspect.signature(init).parameters:
            cls.__init__ = _device.factory_device(init)

    def __init__(self):
        for table in _TABLES:
            object.__setattr__(self, table, _Table(self))
        object.__setattr__(self, "training", True)

    def __setstate__(self, state):
        """Unpickling and copy.deepcopy: the attributes, the tables made GT's again (see _Table)."""
        self.__dict__.update(state)
        for table in _TABLES:
            entries = state.get(table)
            if entries is not None and not (isinstance(entries, _Table) and entries._owner() is self):
                object.__setattr__(self, table, _Table(self, entries))

    def __setattr__(self, name, value):
        if name == "_parameters" and isinstance(value, (list, tuple)) and "_parameters" in self.__dict__:
            # The original GT's idiom `self._parameters = a.parameters() + b.parameters()`:
            # register them (parameters already held by submodules are listed once).
            for i, p in enumerate(value):
                if isinstance(p, T.Tensor):
                    self._parameters[f"_param{i}"] = p
            return
        if "_parameters" not in self.__dict__:  # before Module.__init__: plain values only, as PyTorch's
            if isinstance(value, Parameter):
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            if isinstance(value, Module):
                raise AttributeError("cannot assign module before Module.__init__() call")
            object.__setattr__(self, name, value)
            return
        if isinstance(value, Buffer):  # (registered as the plain tensor it holds)
            self.__dict__.pop(name, None)
            self.register_buffer(name, T.Tensor(value._h, value.shape, value.dtype), value.persistent)
            return
        if isinstance(value, Parameter):
            self._modules.pop(name, None)
            self._buffers.pop(name, None)
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._parameters.pop(name, None)
            self._buffers.pop(name, None)
            self._modules[name] = value
        elif name in self._buffers and (value is None or isinstance(value, T.Tensor)):
            self._buffers[name] = value
        elif name in self._parameters and value is None:
            self._parameters[name] = None
        elif name in self._modules and value is None:  # (the slot stays, as PyTorch's: "(name): None")
            self._modules[name] = None
        else:
            self._parameters.pop(name, None)
            self._modules.pop(name, None)
        object.__setattr__(self, name, value)

    def __delattr__(self, name):
        """del module.name: also out of the parameter, buffer or submodule table, as PyTorch's."""
        for table in _TABLES:
            entries = self.__dict__.get(table)
            if entries is not None and name in entries:
                del entries[name]  # (_Table: out of the attributes too)
                self.__dict__.get("_non_persistent", set()).discard(name)
                return
        object.__delattr__(self, name)

    def __getattr__(self, name):
        """The registered parameter, buffer or submodule `name` (Python calls this only when
        ordinary lookup fails; code that calls `module.__getattr__(name)` itself, as PyTorch's
        modules allow, gets the same). Raises AttributeError otherwise."""
        d = self.__dict__
        for table in ("_parameters", "_buffers", "_modules"):
            entries = d.get(table)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def _get_name(self):
        """The class's name (what repr prints first), as PyTorch's Module._get_name."""
        return type(self).__name__

    @property
    def _non_persistent_buffers_set(self):
        """The names of the buffers registered with persistent=False (left out of state_dict)."""
        return self.__dict__.setdefault("_non_persistent", set())

    @_non_persistent_buffers_set.setter
    def _non_persistent_buffers_set(self, names):
        self.__dict__["_non_persistent"] = set(names)

    def register_buffer(self, name, tensor, persistent=True):
        """A tensor kept with the module (moved by .to(), listed by buffers()); in state_dict
        unless persistent=False."""
        self._buffers[name] = tensor
        if not persistent:
            self.__dict__.setdefault("_non_persistent", set()).add(name)
        else:
            self.__dict__.get("_non_persistent", set()).discard(name)
        object.__setattr__(self, name, tensor)

    def add_module(self, name, module):
        """Registers `module` (a Module, or None: an empty slot, printed "(name): None") as the
        child `name`, as PyTorch's. Raises TypeError for anything else."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if not isinstance(name, str):
            raise TypeError(f"module name should be a string. Got {type(name).__name__}")
        if "." in name or name == "":
            raise KeyError(f'module name can\'t contain ".", got: {name}' if name else 'module name can\'t be empty string ""')
        self._parameters.pop(name, None)
        self._buffers.pop(name, None)
        self._modules[name] = module
        object.__setattr__(self, name, module)

    register_module = add_module

    def get_submodule(self, target):
        """The submodule at dotted path `target` ("" is the module itself); AttributeError if none."""
        m = self
        for part in target.split(".") if target else []:
            if part not in m._modules or m._modules[part] is None:
                raise AttributeError(f"{type(m).__name__} has no attribute `{part}`")
            m = m._modules[part]
        return m

    def get_parameter(self, target):
        module, _, name = target.rpartition(".")
        m = self.get_submodule(module)
        if name not in m._parameters:
            raise AttributeError(f"{type(m).__name__} has no parameter `{name}`")
        return m._parameters[name]

    def get_buffer(self, target):
        module, _, name = target.rpartition(".")
        m = self.get_submodule(module)
        if name not in m._buffers:
            raise AttributeError(f"{type(m).__name__} has no buffer `{name}`")
        return m._buffers[name]

    def register_parameter(self, name, param):
        setattr(self, name, param)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define forward()")

    def __call__(self, *args, **kwargs):
        hooks = self.__dict__.get("_hooks")
        if not hooks:
            return self.forward(*args, **kwargs)
        if hooks["compiled"]:  # gt.compile(module)
            with _signal.context(_runtime.COMPILE_SIGNAL):
                return self._call_with_hooks(hooks, args, kwargs)
        return self._call_with_hooks(hooks, args, kwargs)

    def _call_with_hooks(self, hooks, args, kwargs):
        with_kwargs = hooks["with_kwargs"]
        for key, hook in list(hooks["forward_pre"].items()):
            if key in with_kwargs:  # hook(module, args, kwargs) -> None or (args, kwargs)
                changed = hook(self, args, kwargs)
                if changed is not None:
                    if not (isinstance(changed, tuple) and len(changed) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                                           f"but got {changed}.")
                    args, kwargs = changed
                continue
            changed = hook(self, args)
            if changed is not None:
                args = changed if isinstance(changed, tuple) else (changed,)
        backward = list(hooks["backward"].values())
        if backward:
            args, state = _watch_inputs(self, args, backward)
        try:
            out = self.forward(*args, **kwargs)
        except BaseException:
            for key, hook in list(hooks["forward"].items()):  # always_call=True hooks run anyway
                if key in hooks["always_call"]:
                    try:
                        hook(self, args, kwargs, None) if key in with_kwargs else hook(self, args, None)
                    except Exception:
                        pass
            raise
        for key, hook in list(hooks["forward"].items()):
            changed = hook(self, args, kwargs, out) if key in with_kwargs else hook(self, args, out)
            if changed is not None:
                out = changed
        if backward:
            out = _watch_output(out, state)
        return out

    # ------------------------------------------------------------ hooks
    def _call_state(self):
        """The hooks (and gt.compile's mark) that make a call take the slow path."""
        hooks = self.__dict__.get("_hooks")
        if hooks is None:
            hooks = {"forward_pre": OrderedDict(), "forward": OrderedDict(), "backward": OrderedDict(),
                     "compiled": False, "with_kwargs": set(), "always_call": set()}
            object.__setattr__(self, "_hooks", hooks)
        return hooks

    def _add_hook(self, kind, hook, prepend=False, with_kwargs=False, always_call=False):
        hooks = self._call_state()
        key = object()
        hooks[kind][key] = hook
        if prepend:
            hooks[kind].move_to_end(key, last=False)
        if with_kwargs:
            hooks["with_kwargs"].add(key)
        if always_call:
            hooks["always_call"].add(key)
        return _ag.RemovableHandle(hooks[kind], key)

    @property
    def _forward_pre_hooks(self):
        """The forward pre-hooks (PyTorch's attribute: pruning tutorials print it)."""
        return self._call_state()["forward_pre"] if "_hooks" in self.__dict__ else OrderedDict()

    @property
    def _forward_hooks(self):
        return self._call_state()["forward"] if "_hooks" in self.__dict__ else OrderedDict()

    @property
    def _backward_hooks(self):
        """The backward hooks (PyTorch's attribute: captum's DeepLift reads it)."""
        return self._call_state()["backward"] if "_hooks" in self.__dict__ else OrderedDict()

    @property
    def _state_dict_hooks(self):
        """The state_dict post-hooks (PyTorch's attribute)."""
        return self.__dict__.get("_state_hooks", {}).get("save_post", OrderedDict())

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """hook(module, args) runs before forward; it may return new args (a tuple, or one value).
        With with_kwargs=True, hook(module, args, kwargs) may return (new_args, new_kwargs).
        prepend=True runs it before the hooks registered so far. Returns a handle whose remove()
        unregisters it."""
        return self._add_hook("forward_pre", hook, prepend, with_kwargs)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        """hook(module, args, output) runs after forward (hook(module, args, kwargs, output) with
        with_kwargs=True); it may return a new output. prepend=True runs it first; always_call=True
        also runs it (with output None) when forward raises. Returns a handle whose remove()
        unregisters it."""
        return self._add_hook("forward", hook, prepend, with_kwargs, always_call)

    def register_full_backward_hook(self, hook):
        """hook(module, grad_input, grad_output) runs when the gradients with respect to the
        module's tensor inputs are computed (grad_input: a tuple, None for an input that needs
        none; grad_output: a tuple with the output's gradient); it may return a new grad_input
        tuple. Supported for modules whose forward returns one tensor; registering is fine on
        others, calling them raises NotImplementedError."""
        return self._add_hook("backward", hook)

    register_backward_hook = register_full_backward_hook

    # ------------------------------------------------------------ traversal
    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        """(dotted name, module) for this module and every submodule, depth first; a module
        reached twice (shared) is yielded once unless remove_duplicate=False, as PyTorch's."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if self in memo:
                return
            memo.add(self)
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, prefix + ("." if prefix else "") + name, remove_duplicate)

    def modules(self):
        return _Parameters(m for _, m in self.named_modules())

    def named_children(self):
        """(name, module) of each direct child, a module registered under two names once (its first
        name), as PyTorch's."""
        seen = set()
        return _Parameters((n, m) for n, m in self._modules.items()
                           if m is not None and not (id(m) in seen or seen.add(id(m))))

    def children(self):
        return _Parameters(m for _, m in self.named_children())

    def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
        """(dotted name, parameter) pairs; a parameter shared by two modules appears once
        (under each of its names with remove_duplicate=False, as PyTorch's)."""
        seen = set()
        modules = self.named_modules(remove_duplicate=remove_duplicate) if recurse else [("", self)]
        for mname, m in modules:
            for name, p in m._parameters.items():
                if p is None or (remove_duplicate and id(p) in seen):
                    continue
                seen.add(id(p))
                full = (mname + "." if mname else "") + name
                yield (prefix + "." if prefix else "") + full, p

    def parameters(self, recurse=True):
        """All parameters of this module and its submodules (in registration order): a list
        (the original GT's scripts add two: a.parameters() + b.parameters()) that is also an
        iterator, as PyTorch's generator: next(model.parameters()) is the first parameter."""
        return _Parameters(p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix="", recurse=True, remove_duplicate=True):
        seen = set()
        for mname, m in (self.named_modules() if recurse else [("", self)]):
            for name, b in m._buffers.items():
                if b is None or (remove_duplicate and id(b) in seen):
                    continue
                seen.add(id(b))
                full = (mname + "." if mname else "") + name
                yield (prefix + "." if prefix else "") + full, b

    def buffers(self, recurse=True):
        return _Parameters(b for _, b in self.named_buffers(recurse=recurse))

    def apply(self, fn):
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------ modes and gradients
    def zero_grad(self, set_to_none=True):
        """Drops every parameter's gradient (.grad None), or with set_to_none=False zeroes the
        gradients that exist (a parameter without one keeps None), as PyTorch's."""
        _ag._zero_grads(self.parameters(), set_to_none)

    def requires_grad_(self, requires_grad=True):
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def train(self, mode=True):
        """Sets training mode (`mode`) here and calls each child's train(mode), as PyTorch's, so
        a submodule's own train()/eval() override runs (gpytorch clears its caches there).
        Raises ValueError for a mode that is not a bool."""
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        object.__setattr__(self, "training", mode)
        for m in self._modules.values():
            if m is not None:
                m.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def to(self, *args, dtype=None, device=None, non_blocking=False, memory_format=None, _complex_too=True):
        """module.to(dtype), .to(device), .to(device, dtype), as PyTorch: casts every floating-
        point and complex parameter and buffer to `dtype` (in place: a complex one cast to a
        real dtype loses its imaginary part, with PyTorch's warning) and returns the module. A device is
        checked and moves nothing: the module's tensors stay on the session's workers (see
        gt.device); a memory_format changes nothing (see gt.memory_format). The meta device
        is the exception: .to("meta") makes every parameter and buffer a meta tensor (shape and
        dtype, no values), and a module holding meta tensors raises NotImplementedError for
        another device, as PyTorch (to_empty gives it tensors there)."""
        for a in args:
            if isinstance(a, T.Tensor):
                dtype = a.dtype
            elif _device.is_device(a) or (isinstance(a, int) and not isinstance(a, bool)):
                device = a
            else:
                dtype = _device.dtype_or_device(a)
        if device is not None:
            if _device.is_meta(device):
                self._rebind_all(lambda t: t if t.is_meta else t.to("meta"))
            elif any(t.is_meta for t in list(self.parameters()) + [b for b in self.buffers() if b is not None]):
                raise NotImplementedError("Cannot copy out of meta tensor; no data! Please use torch.nn.Module.to_empty() "
                                          "instead of torch.nn.Module.to() when moving module from meta to a different device.")
        if dtype is None:
            return self
        d = _dt.resolve(dtype)
        if not (d.is_floating_point or d.is_complex):
            raise TypeError(f"nn.Module.to only accepts floating point or complex dtypes, but got desired dtype={d}")
        with no_grad():
            for p in list(self.parameters()) + list(self.buffers()):
                if p.dtype.is_complex or d.is_complex:
                    if p.dtype.is_floating_point or (p.dtype.is_complex and _complex_too):
                        _complex.become(p, T.cast(p, d))
                elif p.dtype.is_floating_point:
                    new = T.cast(p, d)
                    p._h, p.dtype = new._h, new.dtype
        return self

    def float(self):
        """Casts floating parameters and buffers to float32 (in place; complex ones stay); returns self."""
        return self.to(_dt.float32, _complex_too=False)

    def to_empty(self, *, device, recurse=True):
        """Gives every parameter and buffer (of submodules too unless recurse=False) a new
        tensor of its shape and dtype on `device`, as PyTorch: zeros (GT hands out no
        uninitialised memory), or meta tensors for "meta". Parameters stay the same objects.
        Returns the module. Used after building a model under `with gt.device("meta"):`."""
        _device.check(device)
        self._rebind_all(lambda t: T.zeros(t.shape, dtype=t.dtype, device=device), recurse)
        return self

    def _rebind_all(self, make, recurse=True):
        """Each parameter, its .grad, and each buffer takes make(tensor)'s values in place."""
        with no_grad():
            for m in (self.modules() if recurse else [self]):
                for t in list(m._parameters.values()) + list(m._buffers.values()):
                    if t is None:
                        continue
                    new = make(t)
                    t._h = new._h
                    if t.grad is not None:
                        t.grad = make(t.grad)

    def cuda(self, device=None):
        """The module itself (see gt.device and Module.to)."""
        return self.to(device) if device is not None else self

    def xpu(self, device=None):
        """The module itself: GT has no XPU workers; its tensors stay on the session's."""
        return self

    ipu = mtia = xpu

    def type(self, dst_type):
        """Casts parameters and buffers to dst_type (a dtype or a dtype's name), as PyTorch's."""
        return self.to(dst_type)

    def compile(self, *args, **kwargs):
        """Compiles this module in place (gt.compile: its regions compile at once), as
        PyTorch's Module.compile."""
        from .. import _compile
        _compile.compile(self, *args, **kwargs)

    def set_submodule(self, target, module, strict=False):
        """Sets the submodule at dotted path `target` (its parent must exist; strict: the
        submodule itself too). Raises AttributeError otherwise, as PyTorch's."""
        if target == "":
            raise ValueError("Cannot set the submodule without a target name!")
        parent_path, _, name = target.rpartition(".")
        parent = self.get_submodule(parent_path)
        if strict and name not in parent._modules:
            raise AttributeError(f"{type(parent).__name__} has no attribute `{name}`")
        if not isinstance(module, Module):
            raise ValueError(f"`module` is not an nn.Module, found {type(module)}")
        setattr(parent, name, module)

    def register_full_backward_pre_hook(self, hook, prepend=False):
        """hook(module, grad_output) when the module's input gradients are computed (a
        backward hook that sees grad_output: see register_full_backward_hook). PyTorch's may
        return a new grad_output; GT's raises NotImplementedError if it does."""
        def as_backward_hook(module, grad_input, grad_output):
            if hook(module, grad_output) is not None:
                raise NotImplementedError("GT's backward pre-hooks cannot replace grad_output (return None)")
        return self._add_hook("backward", as_backward_hook, prepend)

    call_super_init = False
    dump_patches = False
    T_destination = typing.TypeVar("T_destination", bound=dict)

    def cpu(self):
        """The module itself (see gt.device and Module.to)."""
        return self

    def share_memory(self):
        """The module itself, with a warning: processes share no GT tensor (gt.multiprocessing),
        so a process this module is passed to trains a copy of its own (Hogwild training does
        not update this one)."""
        import warnings
        warnings.warn("Module.share_memory(): GT processes share no tensor memory; a process this module is "
                      "passed to trains a copy of its own, and this one does not change (gt.multiprocessing)",
                      stacklevel=2)
        return self

    def double(self):
        """Casts floating parameters and buffers to float64 (in place; complex ones stay); returns self."""
        return self.to(_dt.float64, _complex_too=False)

    def half(self):
        """Casts floating parameters and buffers to float16 (in place; complex ones stay); returns self."""
        return self.to(_dt.float16, _complex_too=False)

    def bfloat16(self):
        """Casts floating parameters and buffers to bfloat16 (in place; complex ones stay); returns self."""
        return self.to(_dt.bfloat16, _complex_too=False)

    # ------------------------------------------------------------ state
    def state_dict(self, *args, destination=None, prefix="", keep_vars=False):
        """name -> tensor for every parameter and persistent buffer (detached unless keep_vars;
        shares values), this module's first, then each child's under "child." in registration
        order, as PyTorch's. The hooks of register_state_dict_pre_hook run before a module adds
        its entries, hook(module, prefix, keep_vars); those of _register_state_dict_hook /
        register_state_dict_post_hook after it and its children did, hook(module, state_dict,
        prefix, local_metadata), changing state_dict in place (a dict it returns replaces the
        result of the module state_dict() was called on, as PyTorch's)."""
        if args:  # PyTorch's old positional form: state_dict(destination, prefix, keep_vars)
            destination, prefix, keep_vars = (list(args) + [destination, prefix, keep_vars][len(args):])[:3]
        if destination is None:
            destination = OrderedDict()
        hooks = self.__dict__.get("_state_hooks", {})
        for hook in list(hooks.get("save_pre", {}).values()):
            hook(self, prefix, keep_vars)
        self._save_to_state_dict(destination, prefix, keep_vars)
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".", keep_vars=keep_vars)
        for hook in list(hooks.get("save_post", {}).values()):
            result = hook(self, destination, prefix, {})
            if result is not None:
                destination = result
        return destination

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        """Adds this module's own parameters, persistent buffers and extra state (not its
        children's) to `destination` under `prefix`, as PyTorch's (overridable: state_dict calls
        it for each module)."""
        # (without keep_vars: p.data, which shares p's values as PyTorch's detached entries share
        # storage: an in-place op on an entry changes the module, as ultralytics' ModelEMA does)
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.data
        skip = self.__dict__.get("_non_persistent", ())
        for name, b in self._buffers.items():
            if b is not None and name not in skip:
                destination[prefix + name] = b if keep_vars else b.data
        if type(self).get_extra_state is not Module.get_extra_state:
            destination[prefix + "_extra_state"] = self.get_extra_state()

    def _state_hook(self, kind, hook):
        table = self.__dict__.setdefault("_state_hooks", {}).setdefault(kind, OrderedDict())
        key = object()
        table[key] = hook
        return _ag.RemovableHandle(table, key)

    def register_state_dict_pre_hook(self, hook):
        """hook(module, prefix, keep_vars) before state_dict() adds this module's entries."""
        return self._state_hook("save_pre", hook)

    def register_state_dict_post_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata) after state_dict() added this
        module's entries and its children's; it may change state_dict in place."""
        return self._state_hook("save_post", hook)

    def _register_state_dict_hook(self, hook):
        """As register_state_dict_post_hook, and the hook may return a new state dict."""
        return self._state_hook("save_post", hook)

    def register_load_state_dict_pre_hook(self, hook):
        """hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs) before load_state_dict() reads this module's entries
        (prefix: "child." for a submodule); it may change state_dict (a copy of the one given)."""
        return self._state_hook("load_pre", hook)

    def _register_load_state_dict_pre_hook(self, hook, with_module=False):
        """PyTorch's older form: hook(state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs), with the module first when with_module."""
        return self._state_hook("load_pre", hook if with_module else lambda module, *args: hook(*args))

    def register_load_state_dict_post_hook(self, hook):
        """hook(module, incompatible_keys) after load_state_dict() copied the values and before it
        raises for missing or unexpected keys: it may remove keys from incompatible_keys.missing_keys
        and .unexpected_keys (lists) to allow them."""
        return self._state_hook("load_post", hook)

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Copies values (Tensors or NumPy arrays) into this module's parameters and buffers
        (cast to their dtypes). With assign=True the module takes the state dict's tensors
        instead, dtypes included (each parameter a new Parameter keeping the old one's
        requires_grad; an optimizer made before holds the old ones), as PyTorch's `assign`.
        Each module (this one first, then its children) reads its own entries with
        _load_from_state_dict, which a module may override, as PyTorch's; the load hooks
        (register_load_state_dict_pre_hook, ..._post_hook) run as PyTorch's.

        Raises RuntimeError listing shape mismatches, and missing and unexpected keys when
        strict (after copying the others, as PyTorch). Returns (missing_keys, unexpected_keys),
        a named tuple as PyTorch's."""
        metadata = getattr(state_dict, "_metadata", None)  # (PyTorch's: each module's state-dict version)
        state_dict = OrderedDict(state_dict)  # (the pre-hooks change a copy)
        missing, unexpected, error_msgs = [], [], []
        modules = list(self.named_modules(remove_duplicate=False))  # (a shared child under each name, as state_dict)
        for mname, m in modules:
            local = dict(metadata.get(mname, {})) if isinstance(metadata, dict) else {}
            local["assign_to_params_buffers"] = assign
            m._load_from_state_dict(state_dict, mname + "." if mname else "", local, True, missing, unexpected,
                                    error_msgs)
        result = _IncompatibleKeys(missing, unexpected)
        for _, m in modules:
            for hook in list(m.__dict__.get("_state_hooks", {}).get("load_post", {}).values()):
                hook(m, result)
        errors = list(error_msgs)
        if strict:
            keys = lambda ks: ", ".join(f'"{k}"' for k in ks)  # noqa: E731
            errors = ([f"Unexpected key(s) in state_dict: {keys(unexpected)}. "] if unexpected else []) + errors
            errors = ([f"Missing key(s) in state_dict: {keys(missing)}. "] if missing else []) + errors
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        return result

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        """This module's own parameters and persistent buffers from state_dict[prefix + name]
        (not its children's), as PyTorch's: its load pre-hooks run first; a missing key is
        appended to missing_keys, a shape mismatch to error_msgs, and with strict a key under
        prefix that names nothing here or in a child to unexpected_keys. local_metadata's
        "assign_to_params_buffers" is load_state_dict's assign. Modules override it to rename
        old keys before calling it."""
        for hook in list(self.__dict__.get("_state_hooks", {}).get("load_pre", {}).values()):
            hook(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs)
        assign = bool(local_metadata.get("assign_to_params_buffers", False))
        skip = self.__dict__.get("_non_persistent", ())
        local = [n for n, v in self._parameters.items() if v is not None] + \
            [n for n, v in self._buffers.items() if n not in skip and v is not None]  # (None: not expected)
        for name in local:
            key = prefix + name
            if key not in state_dict:
                missing_keys.append(key)
                continue
            self._load_one(name, key, state_dict[key], assign, error_msgs)
        extra = prefix + "_extra_state"
        if type(self).set_extra_state is not Module.set_extra_state:
            if extra in state_dict:
                self.set_extra_state(state_dict[extra])
            elif strict:
                missing_keys.append(extra)
        if strict:
            for key in state_dict:
                if key.startswith(prefix) and key != extra:
                    first = key[len(prefix):].split(".", 1)[0]
                    if first not in self._modules and first not in local:
                        unexpected_keys.append(key)

    def _load_one(self, name, key, value, assign, error_msgs):
        current = getattr(self, name)
        v = value if isinstance(value, T.Tensor) else T.from_numpy(np.asarray(value))
        if isinstance(current, (UninitializedParameter, UninitializedBuffer)):
            current.materialize(tuple(v.shape))  # a lazy module takes the checkpoint's shapes
        if current is not None and current.ndim == 0 and tuple(v.shape) == (1,):
            v = T.reshape(v, ())  # a 0-d entry saved as 1-d (older checkpoints), as PyTorch takes it
        if current is not None and tuple(v.shape) != current.shape:
            error_msgs.append(f"size mismatch for {key}: copying a param with shape {list(v.shape)} from checkpoint, "
                              f"the shape in current model is {list(current.shape)}.")
            return
        if assign and name in self._parameters:
            p = v if isinstance(v, Parameter) and v.requires_grad == (current is None or current.requires_grad) \
                else Parameter(v.detach(), requires_grad=True if current is None else current.requires_grad)
            self._parameters[name] = p
            return
        if current is not None and v.dtype != current.dtype and not assign:
            v = T.cast(v, current.dtype)
        if name in self._parameters and current.dtype.is_complex:  # its parts take the values (they stay
            current.real._h, current.imag._h = v.real._h, v.imag._h  # the leaves that require grad)
        elif name in self._parameters:
            current._h = v._h
        else:
            self._buffers[name] = v.detach()

    def get_extra_state(self):
        """What state_dict() saves under "_extra_state" for a module that overrides this (and
        set_extra_state, which load_state_dict calls with it), as PyTorch's. RuntimeError here."""
        raise RuntimeError("Reached a code path in Module.get_extra_state() that should never be called. Please file "
                           "an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to report "
                           "this bug.")

    def set_extra_state(self, state):
        raise RuntimeError("Reached a code path in Module.set_extra_state() that should never be called. Please file "
                           "an issue at https://github.com/pytorch/pytorch/issues/new?template=bug-report.yml to report "
                           "this bug.")

    # ------------------------------------------------------------ printing
    def __repr__(self):
        """PyTorch's layout: extra_repr's lines, then one "(name): repr" line per child."""
        extra = self.extra_repr()
        lines = (extra.split("\n") if extra else []) + [f"({name}): {_indent(repr(m))}"
                                                         for name, m in self._modules.items()]
        if len(lines) == 1 and not self._modules:
            return f"{type(self).__name__}({lines[0]})"
        return f"{type(self).__name__}(" + "".join(f"\n  {line}" for line in lines) + ("\n)" if lines else ")")

    def extra_repr(self):
        return ""


def _indent(text):
    """`text` with every line but the first indented by two spaces (a child's repr in its parent's)."""
    return text.replace("\n", "\n  ")


# ---------------------------------------------------------------- layers

class Identity(Module):
    """Returns its input; takes and ignores any arguments, as PyTorch's (nn.Identity(128))."""
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class Linear(Module):
    """y = x @ weight.T + bias; weight: (out_features, in_features), bias: (out_features,).

    Initialisation as PyTorch: weight ~ U(-1/sqrt(in), 1/sqrt(in)) (kaiming_uniform with
    a=sqrt(5)), bias ~ U(-1/sqrt(in), 1/sqrt(in)).
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        _device.check(device)  # (see gt.device: the session's workers hold every tensor)
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(T.zeros(out_features, in_features, dtype=dtype))
        self.bias = Parameter(T.zeros(out_features, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            bound = 1.0 / math.sqrt(self.in_features) if self.in_features else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Embedding(Module):
    """A lookup table: integer indices (*) -> rows (*, embedding_dim); weight ~ N(0, 1)."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, _weight=None, _freeze=False, device=None, dtype=None):
        super().__init__()
        _device.check(device)
        if padding_idx is not None and padding_idx < 0:
            padding_idx += num_embeddings
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        self.max_norm, self.norm_type, self.scale_grad_by_freq, self.sparse = max_norm, norm_type, scale_grad_by_freq, sparse
        if _weight is not None:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)
            return
        self.weight = Parameter(T.zeros(num_embeddings, embedding_dim, dtype=dtype), requires_grad=not _freeze)
        self.reset_parameters()

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, padding_idx=None, max_norm=None, norm_type=2.0,
                        scale_grad_by_freq=False, sparse=False):
        """An Embedding whose weight is `embeddings` (num_embeddings, embedding_dim), trained
        only with freeze=False, as torch.nn.Embedding.from_pretrained. ValueError unless 2-D."""
        if embeddings.dim() != 2:
            raise ValueError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse, _weight=embeddings,
                   _freeze=freeze)

    def reset_parameters(self):
        """weight ~ N(0, 1), its padding_idx row zero, as PyTorch's."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            w = self.weight.detach()
            w[self.padding_idx] = 0.0
            self.weight._h = w._h

    def forward(self, x):
        return F.embedding(x, self.weight, self.padding_idx, self.max_norm, self.norm_type, self.scale_grad_by_freq,
                           self.sparse)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += ", scale_grad_by_freq=True"
        return s + (", sparse=True" if self.sparse else "")


class LayerNorm(Module):
    """Normalizes over the last axes `normalized_shape`; weight ones, bias zeros (Ba et al. 2016)."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, device=None, dtype=None):
        super().__init__()
        _device.check(device)
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = Parameter(T.ones(self.normalized_shape, dtype=dtype)) if elementwise_affine else None
        self.bias = Parameter(T.zeros(self.normalized_shape, dtype=dtype)) if elementwise_affine and bias else None

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """x / sqrt(mean(x^2 over the last axes normalized_shape) + eps) * weight (Zhang & Sennrich
    2019); weight ones; eps None is float64's machine epsilon for float64 input, else float32's,
    as torch.nn.RMSNorm."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, device=None, dtype=None):
        super().__init__()
        _device.check(device)
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = Parameter(T.ones(self.normalized_shape, dtype=dtype)) if elementwise_affine else None

    def forward(self, x):
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self):
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class Dropout(Module):
    """`inplace=True` (here and in the activations) rebinds the input tensor to the result and
    returns it (see gt.nn.functional._takes_inplace)."""

    def __init__(self, p=0.5, inplace=False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, x):
        return F.dropout(x, self.p, self.training, inplace=self.inplace)

    def extra_repr(self):
        return f"p={self.p}, inplace={self.inplace}"


class ReLU(Module):
    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return F.relu(x, inplace=self.inplace)

    def extra_repr(self):
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(ReLU):
    def forward(self, x):
        return F.silu(x, inplace=self.inplace)


class Sigmoid(Module):
    def forward(self, x):
        return F.sigmoid(x)


class Tanh(Module):
    def forward(self, x):
        return F.tanh(x)


def _implicit_softmax_dim(name, ndim):
    """PyTorch's legacy choice for a softmax without dim (nn.Softmax()): 0 for 0-, 1- and 3-d
    input, else 1, with its deprecation warning."""
    import warnings
    dim = 0 if ndim in (0, 1, 3) else 1
    warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=3)
    return dim


class Softmax(Module):
    """softmax along `dim`; without one, PyTorch's legacy choice (dim 0 for 0-, 1- and 3-d input,
    else 1) with its deprecation warning."""
    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def _dim(self, x):
        return self.dim if self.dim is not None else _implicit_softmax_dim(type(self).__name__.lower(), x.ndim)

    def forward(self, x):
        return F.softmax(x, self._dim(x))

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) input (dim -3)."""

    def forward(self, x):
        if x.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input of 3 or 4 dimensions, got {x.ndim}")
        return F.softmax(x, -3)


class LogSoftmax(Softmax):
    def forward(self, x):
        return F.log_softmax(x, self._dim(x))


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        if type(x) in _overrides._subclasses:  # (x.flatten: a subclass's __torch_function__ sees it, as PyTorch's)
            return x.flatten(self.start_dim, self.end_dim)
        return T.flatten(x, self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


def _args_repr(args, inplace=False):
    """An activation's extra_repr: k=v for each (name, value) pair, then inplace=True when set
    (PyTorch's activations print the flag only then)."""
    s = ", ".join(f"{k}={v}" for k, v in args)
    if inplace:
        s += ", inplace=True" if s else "inplace=True"
    return s


class LeakyReLU(Module):
    def __init__(self, negative_slope=0.01, inplace=False):
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, x):
        return F.leaky_relu(x, self.negative_slope, inplace=self.inplace)

    def extra_repr(self):
        return _args_repr([("negative_slope", self.negative_slope)], self.inplace)


class _Activation(Module):
    """A module calling one gt.nn.functional activation with fixed keyword arguments. Its repr
    shows the arguments but inplace, then ", inplace=True" when set (PyTorch's form); a class
    whose PyTorch counterpart shows nothing sets _repr_args = False."""
    _fn = None
    _repr_args = True

    def __init__(self, **kwargs):
        super().__init__()
        self._kwargs = kwargs

    def forward(self, x):
        return type(self)._fn(x, **self._kwargs)

    def extra_repr(self):
        if not self._repr_args:
            return ""
        return _args_repr([(k, v) for k, v in self._kwargs.items() if k != "inplace"],
                          self._kwargs.get("inplace", False))


class ELU(_Activation):
    _fn = staticmethod(F.elu)

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__(alpha=alpha, inplace=inplace)


class CELU(_Activation):
    _fn = staticmethod(F.celu)

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__(alpha=alpha, inplace=inplace)


class SELU(_Activation):
    _fn = staticmethod(F.selu)

    def __init__(self, inplace=False):
        super().__init__(inplace=inplace)


class Softplus(Module):
    """F.softplus(x, beta, threshold) (its attributes read at each call, as PyTorch's)."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, x):
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


class Mish(_Activation):
    _fn = staticmethod(F.mish)

    def __init__(self, inplace=False):
        super().__init__(inplace=inplace)


class Hardtanh(_Activation):
    _fn = staticmethod(F.hardtanh)

    def __init__(self, min_val=-1.0, max_val=1.0, inplace=False):
        super().__init__(min_val=min_val, max_val=max_val, inplace=inplace)


class ReLU6(_Activation):
    _fn = staticmethod(F.relu6)

    def __init__(self, inplace=False):
        super().__init__(inplace=inplace)


class Hardsigmoid(ReLU6):
    _fn, _repr_args = staticmethod(F.hardsigmoid), False


class Hardswish(ReLU6):
    _fn, _repr_args = staticmethod(F.hardswish), False


class LogSigmoid(_Activation):
    _fn = staticmethod(F.logsigmoid)


class Softsign(_Activation):
    _fn = staticmethod(F.softsign)


class PReLU(Module):
    """x where x > 0, else weight * x; weight (num_parameters,) starts at `init` (He et al. 2015)."""

    def __init__(self, num_parameters=1, init=0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(T.full((num_parameters,), init, dtype=dtype))

    def reset_parameters(self):
        init.constant_(self.weight, self.init)

    def forward(self, x):
        return F.prelu(x, self.weight)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class Upsample(Module):
    """Resizes spatial axes: see gt.nn.functional.interpolate."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None):
        super().__init__()
        if isinstance(scale_factor, (tuple, list)):
            scale_factor = tuple(float(f) for f in scale_factor)
        elif scale_factor:
            scale_factor = float(scale_factor)
        else:
            scale_factor = None
        self.size, self.scale_factor, self.mode, self.align_corners = size, scale_factor, mode, align_corners
        self.name, self.recompute_scale_factor = type(self).__name__, recompute_scale_factor

    def forward(self, x):
        return F.interpolate(x, self.size, self.scale_factor, self.mode, self.align_corners)

    def extra_repr(self):
        if self.scale_factor is not None:
            return f"scale_factor={self.scale_factor!r}, mode={self.mode!r}"
        return f"size={self.size!r}, mode={self.mode!r}"


class Unflatten(Module):
    """Splits axis `dim` into `unflattened_size` (as torch.nn.Unflatten)."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, tuple(unflattened_size)

    def forward(self, x):
        if type(x) in _overrides._subclasses:  # (x.unflatten: a subclass's __torch_function__ sees it, as PyTorch's)
            return x.unflatten(self.dim, self.unflattened_size)
        d = self.dim % x.ndim
        return T.reshape(x, *x.shape[:d], *self.unflattened_size, *x.shape[d + 1:])

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


# ---------------------------------------------------------------- convolution and pooling

class _ConvNd(Module):
    """Weight (out_channels, in_channels / groups, *kernel_size), bias (out_channels,), both
    ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = in_channels / groups * prod(kernel_size)
    (PyTorch's kaiming_uniform with a=sqrt(5)). padding_mode 'zeros', 'reflect', 'replicate' or
    'circular' (the non-zero modes pad with F.pad first)."""
    _n = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        _device.check(device)
        n = self._n
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ValueError(f"in_channels ({in_channels}) and out_channels ({out_channels}) must be divisible "
                             f"by groups ({groups})")
        if padding_mode not in ("zeros", "reflect", "replicate", "circular"):
            raise ValueError(f"padding_mode must be 'zeros', 'reflect', 'replicate' or 'circular', got {padding_mode!r}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = F._ntuple(kernel_size, n, "kernel_size")
        self.stride, self.dilation = F._ntuple(stride, n, "stride"), F._ntuple(dilation, n, "dilation")
        self.padding = padding if isinstance(padding, str) else F._ntuple(padding, n, "padding")
        if padding == "same" and any(s != 1 for s in self.stride):
            raise ValueError("padding='same' is not supported for strided convolutions")
        self.padding_mode = padding_mode
        self.transposed, self.output_padding = False, (0,) * n  # (PyTorch's _ConvNd attributes)
        if not isinstance(self.padding, str):
            self._reversed_padding_repeated_twice = tuple(p for p in reversed(self.padding) for _ in range(2))
        self.weight = Parameter(T.zeros(out_channels, in_channels // groups, *self.kernel_size, dtype=dtype))
        self.bias = Parameter(T.zeros(out_channels, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in = self.weight.shape[1] * math.prod(self.kernel_size)
            bound = 1.0 / math.sqrt(fan_in) if fan_in else 0.0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x):
        padding = self.padding
        if self.padding_mode != "zeros" and padding != "valid":
            if padding == "same":
                pairs = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2)
                         for k, d in zip(self.kernel_size, self.dilation)]
            else:
                pairs = [(p, p) for p in padding]
            x = F.pad(x, [p for pair in reversed(pairs) for p in pair], mode=self.padding_mode)
            padding = 0
        if type(x) in _overrides._subclasses:  # a tensor subclass's __torch_function__ sees F.conv{n}d, as PyTorch's
            return getattr(F, f"conv{self._n}d")(x, self.weight, self.bias, self.stride, padding, self.dilation,
                                                 self.groups)
        return F._conv(x, self.weight, self.bias, self.stride, padding, self.dilation, self.groups, self._n,
                       type(self).__name__)

    def extra_repr(self):
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0,) * self._n:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._n:
            s += f", dilation={self.dilation}"
        if getattr(self, "output_padding", (0,) * self._n) != (0,) * self._n:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """(N, C_in, L) -> (N, C_out, L_out): see gt.nn.functional.conv1d."""
    _n = 1


class Conv2d(_ConvNd):
    """(N, C_in, H, W) -> (N, C_out, H_out, W_out): see gt.nn.functional.conv2d."""
    _n = 2


class Conv3d(_ConvNd):
    """(N, C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out): see gt.nn.functional.conv3d."""
    _n = 3


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride or kernel_size, padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    def forward(self, x):
        return F.max_pool1d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """Maximum over sliding windows: see gt.nn.functional.max_pool2d."""

    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


class _AvgPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride or kernel_size, padding
        self.ceil_mode, self.count_include_pad, self.divisor_override = ceil_mode, count_include_pad, divisor_override

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool1d(_AvgPoolNd):
    """Stores kernel_size, stride and padding as 1-tuples, as PyTorch's (and prints them so)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        kernel_size = F._ntuple(kernel_size, 1, "kernel_size")
        super().__init__(kernel_size, F._ntuple(stride, 1, "stride") if stride is not None else kernel_size,
                         F._ntuple(padding, 1, "padding"), ceil_mode, count_include_pad)

    def forward(self, x):
        return F.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)


class AvgPool2d(_AvgPoolNd):
    """Mean over sliding windows: see gt.nn.functional.avg_pool2d."""

    def forward(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                            self.divisor_override)


class AdaptiveAvgPool1d(Module):
    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, x):
        return F.adaptive_avg_pool1d(x, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(AdaptiveAvgPool1d):
    """(N, C, H, W) -> (N, C, *output_size): see gt.nn.functional.adaptive_avg_pool2d."""

    def forward(self, x):
        return F.adaptive_avg_pool2d(x, self.output_size)


class AdaptiveMaxPool2d(AdaptiveAvgPool1d):
    """(N, C, H, W) -> (N, C, *output_size), and the maxima's positions with return_indices:
    see gt.nn.functional.adaptive_max_pool2d."""

    def __init__(self, output_size, return_indices=False):
        super().__init__(output_size)
        self.return_indices = return_indices

    def forward(self, x):
        return F.adaptive_max_pool2d(x, self.output_size, self.return_indices)


class _PadNd(Module):
    _mode, _n = "constant", 2

    def __init__(self, padding, value=0.0):
        super().__init__()
        self.padding = F._ntuple(padding, 2 * self._n, "padding")
        self.value = value

    def forward(self, x):
        return F.pad(x, self.padding, self._mode, self.value if self._mode == "constant" else None)

    def extra_repr(self):
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value):
        super().__init__(padding, value)

    def extra_repr(self):
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    _n = 1


class ConstantPad2d(_ConstantPadNd):
    _n = 2


class ZeroPad2d(_PadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ReflectionPad1d(_PadNd):
    _mode, _n = "reflect", 1


class ReflectionPad2d(_PadNd):
    _mode = "reflect"


class ReplicationPad2d(_PadNd):
    _mode = "replicate"


class Dropout2d(Dropout):
    """Zeroes whole channels: see gt.nn.functional.dropout2d."""

    def forward(self, x):
        return F.dropout2d(x, self.p, self.training, inplace=self.inplace)


# ---------------------------------------------------------------- normalization over channels

class _NormBase(Module):
    """What batch and instance normalization share: their affine parameters and running-statistics
    buffers (PyTorch's _NormBase)."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, device=None,
                 dtype=None):
        super().__init__()
        _device.check(device)
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = Parameter(T.ones(num_features, dtype=dtype)) if affine else None
        self.bias = Parameter(T.zeros(num_features, dtype=dtype)) if affine else None
        if track_running_stats:
            self.register_buffer("running_mean", T.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", T.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", T.zeros((), dtype=_dt.int64))
        else:
            self.running_mean = self.running_var = self.num_batches_tracked = None

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                              error_msgs):
        """As PyTorch's: a state dict of version 1 or none (torchvision's old checkpoints, a
        plain dict) that lacks num_batches_tracked loads with this module's own."""
        version = local_metadata.get("version")
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and key not in state_dict:
            state_dict[key] = self.num_batches_tracked
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                                      error_msgs)

    def reset_running_stats(self):
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1.0)
                self.num_batches_tracked.zero_()

    def extra_repr(self):
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


class _BatchNorm(_NormBase):
    """Batch normalization (Ioffe & Szegedy 2015) over every axis but the channels (axis 1):
    weight ones and bias zeros (num_features,) when affine; buffers running_mean (zeros),
    running_var (ones) and num_batches_tracked (int64) when track_running_stats. In training
    the batch's statistics normalize and update the running ones with `momentum` (None: a
    cumulative average over the batches seen, which reads num_batches_tracked each step); in
    eval mode the running statistics normalize."""
    _ranks = (2, 3, 4)

    def forward(self, x):
        if x.ndim not in self._ranks:
            raise ValueError(f"{type(self).__name__}: expected {' or '.join(f'{r}D' for r in self._ranks)} input "
                             f"(got {x.ndim}D input)")
        if x.shape[1] != self.num_features:
            raise _C.ShapeError(f"{type(self).__name__}: expected {self.num_features} channels (axis 1), got input "
                                 f"of shape {list(x.shape)}")
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked.item())
        use_batch = self.training or self.running_mean is None
        track = not self.training or self.track_running_stats
        return F.batch_norm(x, self.running_mean if track else None, self.running_var if track else None,
                            self.weight, self.bias, use_batch, factor, self.eps)


class SyncBatchNorm(_BatchNorm):
    """torch.nn.SyncBatchNorm: batch normalization over the whole batch of every device. In GT
    one program runs the batch whichever workers hold its parts (a sharding config spreads it),
    so the statistics are always the whole batch's: the same computation as BatchNorm, for
    inputs of 2 to 5 dimensions. process_group is accepted."""
    _ranks = (2, 3, 4, 5)

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_group=None, device=None, dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """`module` with every BatchNorm1d/2d/3d in it replaced by a SyncBatchNorm holding the
        same parameters, buffers and training mode (the module itself when it is one)."""
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine, module.track_running_stats)
            for name in ("weight", "bias"):
                if getattr(module, name) is not None:
                    out._parameters[name] = getattr(module, name)
                    object.__setattr__(out, name, getattr(module, name))
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                if name in module._buffers:
                    out._buffers[name] = module._buffers[name]
                    object.__setattr__(out, name, module._buffers[name])
            out.training = module.training
            return out
        for name, child in list(module._modules.items()):
            if child is not None:
                converted = cls.convert_sync_batchnorm(child, process_group)
                if converted is not child:
                    setattr(module, name, converted)
        return module


class BatchNorm1d(_BatchNorm):
    """(N, C) or (N, C, L) input."""
    _ranks = (2, 3)


class BatchNorm2d(_BatchNorm):
    """(N, C, H, W) input."""
    _ranks = (4,)


class BatchNorm3d(_BatchNorm):
    """(N, C, D, H, W) input."""
    _ranks = (5,)


class GroupNorm(Module):
    """Group normalization (Wu & He 2018): see gt.nn.functional.group_norm; weight ones and
    bias zeros (num_channels,) when affine."""

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None, dtype=None):
        super().__init__()
        _device.check(device)
        if num_groups <= 0 or num_channels % num_groups:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups ({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        self.weight = Parameter(T.ones(num_channels, dtype=dtype)) if affine else None
        self.bias = Parameter(T.zeros(num_channels, dtype=dtype)) if affine else None

    def forward(self, x):
        return F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self):
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class CrossEntropyLoss(Module):
    def __init__(self, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        super().__init__()
        self.weight, self.ignore_index, self.reduction, self.label_smoothing = weight, ignore_index, reduction, label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, self.weight, self.ignore_index, self.reduction, self.label_smoothing)


class MSELoss(Module):
    def __init__(self, reduction="mean"):
        super().__init__()
        self.reduction = reduction

    def forward(self, input, target):
        return F.mse_loss(input, target, self.reduction)


class _Loss(Module):
    """A loss module: forward(input, target) calls its functional form with the module's options.
    Its repr shows none of them, as PyTorch's (L1Loss())."""

    _options = ()

    def __init__(self, **options):
        super().__init__()
        for k, v in options.items():
            setattr(self, k, v)

    def forward(self, input, target):
        return type(self)._fn(input, target, **{k: getattr(self, k) for k in self._options})


class L1Loss(_Loss):
    _fn, _options = staticmethod(F.l1_loss), ("reduction",)

    def __init__(self, reduction="mean"):
        super().__init__(reduction=reduction)


class SmoothL1Loss(_Loss):
    _fn, _options = staticmethod(F.smooth_l1_loss), ("reduction", "beta")

    def __init__(self, reduction="mean", beta=1.0):
        super().__init__(reduction=reduction, beta=beta)


class HuberLoss(_Loss):
    _fn, _options = staticmethod(F.huber_loss), ("reduction", "delta")

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(reduction=reduction, delta=delta)


class NLLLoss(_Loss):
    _fn, _options = staticmethod(F.nll_loss), ("weight", "ignore_index", "reduction")

    def __init__(self, weight=None, ignore_index=-100, reduction="mean"):
        super().__init__(weight=weight, ignore_index=ignore_index, reduction=reduction)


class CTCLoss(Module):
    """Connectionist temporal classification loss: forward(log_probs, targets, input_lengths,
    target_lengths), see gt.nn.functional.ctc_loss."""

    def __init__(self, blank=0, reduction="mean", zero_infinity=False):
        super().__init__()
        self.blank, self.reduction, self.zero_infinity = blank, reduction, zero_infinity

    def forward(self, log_probs, targets, input_lengths, target_lengths):
        return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, self.blank, self.reduction,
                          self.zero_infinity)


class BCELoss(_Loss):
    _fn, _options = staticmethod(F.binary_cross_entropy), ("weight", "reduction")

    def __init__(self, weight=None, reduction="mean"):
        super().__init__(weight=weight, reduction=reduction)


class BCEWithLogitsLoss(_Loss):
    _fn, _options = staticmethod(F.binary_cross_entropy_with_logits), ("weight", "reduction", "pos_weight")

    def __init__(self, weight=None, reduction="mean", pos_weight=None):
        super().__init__(weight=weight, reduction=reduction, pos_weight=pos_weight)


class KLDivLoss(_Loss):
    _fn, _options = staticmethod(F.kl_div), ("reduction", "log_target")

    def __init__(self, reduction="mean", log_target=False):
        super().__init__(reduction=reduction, log_target=log_target)


class Sequential(Module):
    """Applies its modules in order."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                setattr(self, name, m)
        else:
            for i, m in enumerate(modules):
                setattr(self, str(i), m)

    def forward(self, input):  # (PyTorch's argument name: seq(input=x))
        for m in self._modules.values():
            input = m(input)
        return input

    def append(self, module):
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        _renumber(self, _inserted(list(self._modules.values()), index, module))
        return self

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def __add__(self, other):
        """A new Sequential of this one's modules then other's, as PyTorch's."""
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return Sequential(*self, *other)

    def __iadd__(self, other):
        if not isinstance(other, Sequential):
            raise ValueError(f"add operator supports only objects of Sequential class, but {type(other)} is given.")
        return self.extend(list(other))

    def __getitem__(self, i):
        items = list(self._modules.values())
        return Sequential(*items[i]) if isinstance(i, slice) else items[i]

    def __setitem__(self, i, module):
        self.add_module(list(self._modules)[i], module)

    def __delitem__(self, i):
        """Deletes module(s) i (an index or a slice); the rest are renumbered 0, 1, ..., named
        ones too, as PyTorch's."""
        items = list(self._modules.values())
        del items[i]
        _renumber(self, items)

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())


class ModuleList(Module):
    """A list of modules whose parameters the parent registers (None entries are kept, as
    PyTorch's)."""

    def __init__(self, modules=()):
        super().__init__()
        for m in (modules if modules is not None else ()):
            self.append(m)

    def append(self, module):
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def __getitem__(self, i):
        items = list(self._modules.values())
        return ModuleList(items[i]) if isinstance(i, slice) else items[i]

    def __setitem__(self, i, module):
        self.add_module(list(self._modules)[i], module)

    def __delitem__(self, i):
        """Deletes module(s) i (an index or a slice); the rest are renumbered, as PyTorch's."""
        items = list(self._modules.values())
        del items[i]
        _renumber(self, items)

    def insert(self, index, module):
        _renumber(self, _inserted(list(self._modules.values()), index, module))

    def pop(self, key):
        v = self[key]
        del self[key]
        return v

    def __iadd__(self, modules):
        return self.extend(modules)

    def __add__(self, other):
        return ModuleList(list(self) + list(other))

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __repr__(self):
        """PyTorch's form: a run of children with the same repr is one line, "(0-5): 6 x Linear(...)"."""
        runs = []  # [first index, last index, repr]
        for i, m in enumerate(self._modules.values()):
            text = repr(m)
            if runs and runs[-1][2] == text:
                runs[-1][1] = i
            else:
                runs.append([i, i, text])
        lines = [f"({a}): {_indent(text)}" if a == b else f"({a}-{b}): {b - a + 1} x {_indent(text)}"
                 for a, b, text in runs]
        return f"{type(self).__name__}(" + "".join(f"\n  {line}" for line in lines) + ("\n)" if lines else ")")


def _inserted(items, index, module):
    items.insert(index, module)
    return items


def _renumber(container, modules):
    """`container` (a ModuleList or Sequential) holding `modules` under the names 0, 1, ..."""
    for name in list(container._modules):
        container.__dict__.pop(name, None)
    container._modules.clear()
    for i, m in enumerate(modules):
        container.add_module(str(i), m)


class ModuleDict(Module):
    """A dict of modules whose parameters the parent registers."""

    def __init__(self, modules=None):
        super().__init__()
        for name, m in (modules.items() if isinstance(modules, dict) else modules or ()):
            self.add_module(name, m)

    def __getitem__(self, name):
        return self._modules[name]

    def __setitem__(self, name, module):
        self.add_module(name, module)

    def __delitem__(self, name):
        del self._modules[name]
        self.__dict__.pop(name, None)

    def pop(self, name):
        """Removes the module named `name` and returns it."""
        module = self[name]
        del self[name]
        return module

    def __contains__(self, name):
        return name in self._modules

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def update(self, modules):
        """Adds (or replaces) the modules of a mapping or of (name, module) pairs."""
        for name, m in (modules.items() if hasattr(modules, "items") else modules):
            self[name] = m

    def clear(self):
        for name in list(self._modules):
            del self[name]


def _parameter_line(p, type_name):
    """A ParameterList/ParameterDict entry as PyTorch prints it: Parameter containing: [gt.float32 of size 2x3]."""
    size = "x".join(str(n) for n in p.shape)
    device = f" (GPU {p.get_device()})" if p.is_cuda else ""
    return f"{'Parameter' if isinstance(p, Parameter) else 'Tensor'} containing: [{type_name} of size {size}{device}]"


def _as_parameter(value):
    """A Parameter as ParameterList/ParameterDict store it (a plain tensor becomes a Parameter
    that requires grad, as in PyTorch)."""
    if isinstance(value, Parameter) or value is None:
        return value
    if isinstance(value, T.Tensor):
        return Parameter(value.detach())
    raise TypeError(f"ParameterList/ParameterDict hold tensors, got {type(value).__name__}")


class ParameterList(Module):
    """A list of parameters the parent registers (named "0", "1", ...), as torch.nn.ParameterList;
    a plain tensor added to it becomes a Parameter."""

    def __init__(self, values=None):
        super().__init__()
        for v in values or ():
            self.append(v)

    def append(self, value):
        setattr(self, str(len(self._parameters)), _as_parameter(value))
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def __iadd__(self, values):
        return self.extend(values)

    def __getitem__(self, i):
        items = list(self._parameters.values())
        return ParameterList(items[i]) if isinstance(i, slice) else items[i]

    def __setitem__(self, i, value):
        key = list(self._parameters)[i]
        setattr(self, key, _as_parameter(value))

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def extra_repr(self):
        return "\n".join(f"  ({i}): {_parameter_line(p, p.dtype)}" for i, p in enumerate(self._parameters.values()))


class ParameterDict(Module):
    """Parameters by name, registered with the parent, as torch.nn.ParameterDict (insertion
    order kept; a plain tensor becomes a Parameter)."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key):
        return self._parameters[key]

    def __setitem__(self, key, value):
        if not isinstance(key, str) or not key or "." in key:
            raise KeyError(f"parameter name must be a non-empty string without '.', got {key!r}")
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key):
        del self._parameters[key]  # (the attribute goes with it: _Table)

    def __contains__(self, key):
        return key in self._parameters

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def keys(self):
        return self._parameters.keys()

    def values(self):
        return self._parameters.values()

    def items(self):
        return self._parameters.items()

    def update(self, parameters):
        items = parameters.items() if hasattr(parameters, "items") else parameters
        for k, v in items:
            self[k] = v

    def pop(self, key):
        value = self._parameters[key]
        del self[key]
        return value

    def get(self, key, default=None):
        return self._parameters.get(key, default)

    def clear(self):
        for key in list(self._parameters):
            del self[key]

    def popitem(self):
        key = next(reversed(self._parameters))
        return key, self.pop(key)

    def setdefault(self, key, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def copy(self):
        return ParameterDict(OrderedDict(self._parameters))

    def fromkeys(self, keys, default=None):
        return ParameterDict((k, default) for k in keys)

    def __or__(self, other):
        out = self.copy()
        out.update(other)
        return out

    def __ior__(self, other):
        self.update(other)
        return self

    def extra_repr(self):
        return "\n".join(f"  ({k}): {_parameter_line(p, p.type())}" for k, p in self._parameters.items())


# ---------------------------------------------------------------- more layers scripts use

class _ConvTransposeNd(Module):
    """Weight (in_channels, out_channels / groups, *kernel_size), bias (out_channels,), both
    initialized as PyTorch's (kaiming_uniform with a=sqrt(5) on the weight, whose fan_in is
    out_channels / groups * prod(kernel_size)). forward(x, output_size=None): output_size (the
    spatial sizes, or with the batch and channel axes) picks the output_padding that gives it."""
    _n = 2

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", device=None, dtype=None):
        super().__init__()
        _device.check(device)
        n = self._n
        if groups <= 0 or in_channels % groups or out_channels % groups:
            raise ValueError(f"in_channels ({in_channels}) and out_channels ({out_channels}) must be divisible "
                             f"by groups ({groups})")
        if padding_mode != "zeros":
            raise ValueError(f"Only 'zeros' padding mode is supported for {type(self).__name__}")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = F._ntuple(kernel_size, n, "kernel_size")
        self.stride, self.padding = F._ntuple(stride, n, "stride"), F._ntuple(padding, n, "padding")
        self.output_padding = F._ntuple(output_padding, n, "output_padding")
        self.dilation, self.padding_mode = F._ntuple(dilation, n, "dilation"), padding_mode
        self.transposed = True
        self._reversed_padding_repeated_twice = tuple(p for p in reversed(self.padding) for _ in range(2))
        self.weight = Parameter(T.zeros(in_channels, out_channels // groups, *self.kernel_size, dtype=dtype))
        self.bias = Parameter(T.zeros(out_channels, dtype=dtype)) if bias else None
        self.reset_parameters()

    reset_parameters = _ConvNd.reset_parameters

    def forward(self, x, output_size=None):
        output_padding = self.output_padding
        if output_size is not None:
            size = list(output_size)[-self._n:]
            base = [(x.shape[-self._n + i] - 1) * self.stride[i] - 2 * self.padding[i] +
                    self.dilation[i] * (self.kernel_size[i] - 1) + 1 for i in range(self._n)]
            output_padding = tuple(s - b for s, b in zip(size, base))
            if any(not 0 <= op < max(s, d) for op, s, d in zip(output_padding, self.stride, self.dilation)):
                raise ValueError(f"requested an output size of {size}, but valid sizes are {base} plus less than "
                                 f"the stride or dilation")
        if type(x) in _overrides._subclasses:  # (through F.conv_transpose{n}d's protocol, as PyTorch's)
            return getattr(F, f"conv_transpose{self._n}d")(x, self.weight, self.bias, self.stride, self.padding,
                                                           output_padding, self.groups, self.dilation)
        return F._conv_transpose(x, self.weight, self.bias, self.stride, self.padding, output_padding, self.groups,
                                 self.dilation, self._n, type(self).__name__)

    extra_repr = _ConvNd.extra_repr


class ConvTranspose1d(_ConvTransposeNd):
    """(N, C_in, L) -> (N, C_out, L_out): see gt.nn.functional.conv_transpose1d."""
    _n = 1


class ConvTranspose2d(_ConvTransposeNd):
    """(N, C_in, H, W) -> (N, C_out, H_out, W_out): see gt.nn.functional.conv_transpose2d."""
    _n = 2


class ConvTranspose3d(_ConvTransposeNd):
    """(N, C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out): see gt.nn.functional.conv_transpose3d."""
    _n = 3


class PixelShuffle(Module):
    """(*, C r^2, H, W) -> (*, C, H r, W r): see gt.nn.functional.pixel_shuffle."""

    def __init__(self, upscale_factor):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, x):
        return F.pixel_shuffle(x, self.upscale_factor)

    def extra_repr(self):
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    def __init__(self, downscale_factor):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, x):
        return F.pixel_unshuffle(x, self.downscale_factor)

    def extra_repr(self):
        return f"downscale_factor={self.downscale_factor}"


class _InstanceNorm(_NormBase):
    """Instance normalization (Ulyanov et al. 2016): each sample's channel normalized over its
    spatial axes; weight ones and bias zeros (num_features,) when affine. With
    track_running_stats, buffers running_mean and running_var (num_features,) (and
    num_batches_tracked, which stays 0, as PyTorch's) are updated in training and normalize in
    eval mode (see gt.nn.functional.instance_norm)."""
    _n = 2

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, device=None,
                 dtype=None):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)

    def forward(self, x):
        if x.ndim not in (self._n + 1, self._n + 2):
            raise ValueError(f"{type(self).__name__}: expected {self._n + 1}D or {self._n + 2}D input "
                             f"(got {x.ndim}D input)")
        unbatched = x.ndim == self._n + 1
        if unbatched:
            x = T.unsqueeze(x, 0)
        y = F.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            self.training or not self.track_running_stats,
                            0.0 if self.momentum is None else self.momentum, self.eps)
        return T.squeeze(y, 0) if unbatched else y


class InstanceNorm1d(_InstanceNorm):
    _n = 1


class InstanceNorm2d(_InstanceNorm):
    _n = 2


class InstanceNorm3d(_InstanceNorm):
    _n = 3


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear resizing with align_corners=True (as PyTorch's UpsamplingBilinear2d)."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


def _elementwise_module(name, fn, *params, doc=None, extra_repr=None):
    """A Module class whose forward(x) is fn(x, *its params), e.g. Softshrink(lambd=0.5);
    extra_repr (a function of the module) replaces the default "param=value, ..." repr."""
    names = [p[0] for p in params]

    def __init__(self, *args, **kwargs):
        Module.__init__(self)
        values = dict(params)
        values.update(zip(names, args))
        values.update(kwargs)
        for k in names:
            setattr(self, k, values[k])

    def forward(self, x):
        return fn(x, *(getattr(self, k) for k in names))

    def default_extra_repr(self):
        return _args_repr([(k, getattr(self, k)) for k in names if k != "inplace"], getattr(self, "inplace", False))

    return type(name, (Module,), {"__init__": __init__, "forward": forward,
                                  "extra_repr": extra_repr or default_extra_repr,
                                  "__doc__": doc or f"See gt.nn.functional.{fn.__name__}."})


Softmin = _elementwise_module("Softmin", F.softmin, ("dim", None))
Threshold = _elementwise_module("Threshold", lambda x, t, v, inplace=False: F.threshold(x, t, v, inplace=inplace),
                                ("threshold", None), ("value", None), ("inplace", False),
                                doc="input where input > threshold, else value.")
GLU = _elementwise_module("GLU", F.glu, ("dim", -1))
Hardshrink = _elementwise_module("Hardshrink", F.hardshrink, ("lambd", 0.5), extra_repr=lambda self: f"{self.lambd}")
Softshrink = _elementwise_module("Softshrink", F.softshrink, ("lambd", 0.5), extra_repr=lambda self: f"{self.lambd}")
Tanhshrink = _elementwise_module("Tanhshrink", F.tanhshrink)
Dropout1d = type("Dropout1d", (Dropout,), {"forward": lambda self, x: F.dropout1d(x, self.p, self.training,
                                                                                 inplace=self.inplace),
                                           "__doc__": "Zeroes whole channels: see gt.nn.functional.dropout1d."})
Dropout3d = type("Dropout3d", (Dropout,), {"forward": lambda self, x: F.dropout3d(x, self.p, self.training,
                                                                                 inplace=self.inplace),
                                           "__doc__": "Zeroes whole channels: see gt.nn.functional.dropout3d."})


class CosineSimilarity(Module):
    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    def __init__(self, p=2.0, eps=1e-6, keepdim=False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class MaxPool3d(_MaxPoolNd):
    def forward(self, x):
        return F.max_pool3d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


class AvgPool3d(_AvgPoolNd):
    def forward(self, x):
        return F.avg_pool3d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                            self.divisor_override)


class AdaptiveAvgPool3d(AdaptiveAvgPool1d):
    def forward(self, x):
        return F.adaptive_avg_pool3d(x, self.output_size)


class AdaptiveMaxPool3d(AdaptiveMaxPool2d):
    """(N, C, D, H, W) -> (N, C, *output_size): see gt.nn.functional.adaptive_max_pool3d."""

    def forward(self, x):
        return F.adaptive_max_pool3d(x, self.output_size, self.return_indices)


class AdaptiveMaxPool1d(AdaptiveMaxPool2d):
    """(N, C, L) -> (N, C, output_size): see gt.nn.functional.adaptive_max_pool1d."""

    def forward(self, x):
        return F.adaptive_max_pool1d(x, self.output_size, self.return_indices)


class ZeroPad1d(_PadNd):
    _n = 1

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ZeroPad3d(_PadNd):
    _n = 3

    def __init__(self, padding):
        super().__init__(padding, 0.0)


class ConstantPad3d(_ConstantPadNd):
    _n = 3


class ReflectionPad3d(_PadNd):
    _mode, _n = "reflect", 3


class ReplicationPad1d(_PadNd):
    _mode, _n = "replicate", 1


class ReplicationPad3d(_PadNd):
    _mode, _n = "replicate", 3


class CircularPad1d(_PadNd):
    _mode, _n = "circular", 1


class CircularPad2d(_PadNd):
    _mode, _n = "circular", 2


class CircularPad3d(_PadNd):
    _mode, _n = "circular", 3


class _PairLoss(_Loss):
    """A loss of (input1, input2, target)."""

    def forward(self, input1, input2, target):
        return type(self)._fn(input1, input2, target, **{k: getattr(self, k) for k in self._options})


class MarginRankingLoss(_PairLoss):
    _fn, _options = staticmethod(F.margin_ranking_loss), ("margin", "reduction")

    def __init__(self, margin=0.0, reduction="mean"):
        super().__init__(margin=margin, reduction=reduction)


class CosineEmbeddingLoss(_PairLoss):
    _fn, _options = staticmethod(F.cosine_embedding_loss), ("margin", "reduction")

    def __init__(self, margin=0.0, reduction="mean"):
        super().__init__(margin=margin, reduction=reduction)


class HingeEmbeddingLoss(_Loss):
    _fn, _options = staticmethod(F.hinge_embedding_loss), ("margin", "reduction")

    def __init__(self, margin=1.0, reduction="mean"):
        super().__init__(margin=margin, reduction=reduction)


class SoftMarginLoss(_Loss):
    _fn, _options = staticmethod(F.soft_margin_loss), ("reduction",)

    def __init__(self, reduction="mean"):
        super().__init__(reduction=reduction)


class MultiLabelSoftMarginLoss(_Loss):
    _fn, _options = staticmethod(F.multilabel_soft_margin_loss), ("weight", "reduction")

    def __init__(self, weight=None, reduction="mean"):
        super().__init__(weight=weight, reduction=reduction)


class PoissonNLLLoss(_Loss):
    _fn, _options = staticmethod(F.poisson_nll_loss), ("log_input", "full", "eps", "reduction")

    def __init__(self, log_input=True, full=False, eps=1e-8, reduction="mean"):
        super().__init__(log_input=log_input, full=full, eps=eps, reduction=reduction)


class TripletMarginLoss(Module):
    def __init__(self, margin=1.0, p=2.0, eps=1e-6, swap=False, reduction="mean"):
        super().__init__()
        self.margin, self.p, self.eps, self.swap, self.reduction = margin, p, eps, swap, reduction

    def forward(self, anchor, positive, negative):
        return F.triplet_margin_loss(anchor, positive, negative, self.margin, self.p, self.eps, self.swap,
                                     self.reduction)


class GaussianNLLLoss(Module):
    def __init__(self, full=False, eps=1e-6, reduction="mean"):
        super().__init__()
        self.full, self.eps, self.reduction = full, eps, reduction

    def forward(self, input, target, var):
        return F.gaussian_nll_loss(input, target, var, self.full, self.eps, self.reduction)


class Unfold(Module):
    """(N, C, H, W) -> (N, C kH kW, L): see gt.nn.functional.unfold."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation, self.padding, self.stride = kernel_size, dilation, padding, stride

    def forward(self, x):
        return F.unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
                f"stride={self.stride}")


class Fold(Module):
    """(N, C kH kW, L) -> (N, C, *output_size): see gt.nn.functional.fold."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, x):
        return F.fold(x, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self):
        return f"output_size={self.output_size}, " + Unfold.extra_repr(self)


class Bilinear(Module):
    """y = x1 W x2^T + b: weight (out_features, in1_features, in2_features) and bias
    (out_features,) ~ U(-1/sqrt(in1_features), 1/sqrt(in1_features)), as PyTorch's."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, dtype=None):
        super().__init__()
        _device.check(device)
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(T.zeros(out_features, in1_features, in2_features, dtype=dtype))
        self.bias = Parameter(T.zeros(out_features, dtype=dtype)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        bound = 1.0 / math.sqrt(self.in1_features)
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, x1, x2):
        return F.bilinear(x1, x2, self.weight, self.bias)

    def extra_repr(self):
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class LPPool1d(Module):
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode=False):
        super().__init__()
        self.norm_type, self.kernel_size, self.stride, self.ceil_mode = norm_type, kernel_size, stride, ceil_mode

    def forward(self, x):
        return F.lp_pool1d(x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)

    def extra_repr(self):
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, stride={self.stride}, "
                f"ceil_mode={self.ceil_mode}")


class LPPool2d(LPPool1d):
    """(sum over each window of x^p)^(1/p): see gt.nn.functional.lp_pool2d."""

    def forward(self, x):
        return F.lp_pool2d(x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class LPPool3d(LPPool1d):
    """(sum over each window of x^p)^(1/p): see gt.nn.functional.lp_pool3d."""

    def forward(self, x):
        return F.lp_pool3d(x, self.norm_type, self.kernel_size, self.stride, self.ceil_mode)


class LocalResponseNorm(Module):
    """See gt.nn.functional.local_response_norm."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, x):
        return F.local_response_norm(x, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(Module):
    """Lua Torch's cross-channel LRN of (N, C, H, W) input, as torch.nn.CrossMapLRN2d: x * (k +
    alpha / size * s_c)^-beta, s_c the sum of x^2 over the channels from c - pre + 1 to c + pre - 1,
    pre = (size - 1) // 2 + 1, computed as PyTorch's by a running sum that adds the next channel
    and drops the one leaving only from c > pre on, so channel 0 stays in every later window
    (its legacy kernel's arithmetic). LocalResponseNorm is the centred window. Raises ValueError
    for input that is not 4-D."""

    def __init__(self, size, alpha=1e-4, beta=0.75, k=1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        if input.ndim != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D instead.")
        C = input.shape[1]
        pre = int((self.size - 1) / 2 + 1)
        running = T.cumsum(input * input, 1)  # running[:, j] = sum of the squares of channels 0..j
        upper = T.tensor([min(c + pre - 1, C - 1) for c in range(C)])
        total = T.index_select(running, 1, upper)
        if C > pre + 1:  # the channels dropped from the sum: 1 .. c - pre for c > pre
            dropped = T.index_select(running, 1, T.tensor([max(c - pre, 0) for c in range(C)])) - running[:, :1]
            total = total - dropped
        return input * (total * (self.alpha / self.size) + self.k) ** -self.beta

    def extra_repr(self):
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


ChannelShuffle = _elementwise_module("ChannelShuffle", F.channel_shuffle, ("groups", None))


class RReLU(Module):
    """Randomized leaky ReLU: see gt.nn.functional.rrelu."""

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, x):
        return F.rrelu(x, self.lower, self.upper, self.training, inplace=self.inplace)

    def extra_repr(self):
        return _args_repr([("lower", self.lower), ("upper", self.upper)], self.inplace)


class AlphaDropout(Dropout):
    """Dropout for SELU networks: see gt.nn.functional.alpha_dropout."""

    def forward(self, x):
        return F.alpha_dropout(x, self.p, self.training, inplace=self.inplace)


class MultiMarginLoss(_Loss):
    _fn, _options = staticmethod(F.multi_margin_loss), ("p", "margin", "weight", "reduction")

    def __init__(self, p=1, margin=1.0, weight=None, reduction="mean"):
        super().__init__(p=p, margin=margin, weight=weight, reduction=reduction)


class EmbeddingBag(Module):
    """Sums, means or maxima of bags of embedding rows: see gt.nn.functional.embedding_bag;
    weight ~ N(0, 1) (num_embeddings, embedding_dim)."""

    def __init__(self, num_embeddings, embedding_dim, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                 mode="mean", sparse=False, _weight=None, include_last_offset=False, padding_idx=None, device=None,
                 dtype=None):
        super().__init__()
        _device.check(device)
        self.num_embeddings, self.embedding_dim, self.mode = num_embeddings, embedding_dim, mode
        self.include_last_offset, self.padding_idx = include_last_offset, padding_idx
        if _weight is not None:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError("Shape of weight does not match num_embeddings and embedding_dim")
            self.weight = Parameter(_weight)
            return
        self.weight = Parameter(T.zeros(num_embeddings, embedding_dim, dtype=dtype))
        init.normal_(self.weight)

    @classmethod
    def from_pretrained(cls, embeddings, freeze=True, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
                        mode="mean", sparse=False, include_last_offset=False, padding_idx=None):
        """An EmbeddingBag whose weight is `embeddings` (num_embeddings, embedding_dim), trained
        only with freeze=False, as torch.nn.EmbeddingBag.from_pretrained. ValueError unless 2-D."""
        if embeddings.dim() != 2:
            raise ValueError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings, include_last_offset,
                  padding_idx)
        bag.weight.requires_grad = not freeze
        return bag

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, mode=self.mode, per_sample_weights=per_sample_weights,
                               include_last_offset=self.include_last_offset, padding_idx=self.padding_idx)

    def extra_repr(self):
        s = f"{self.num_embeddings}, {self.embedding_dim}, mode={self.mode!r}"
        return s if self.padding_idx is None else s + f", padding_idx={self.padding_idx}"


class _MaxUnpoolNd(Module):
    _n = 2

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size = F._ntuple(kernel_size, self._n, "kernel_size")
        self.stride = self.kernel_size if stride is None else F._ntuple(stride, self._n, "stride")
        self.padding = F._ntuple(padding, self._n, "padding")

    def forward(self, input, indices, output_size=None):
        return F._max_unpool(input, indices, self.kernel_size, self.stride, self.padding, output_size, self._n,
                             type(self).__name__)

    def extra_repr(self):
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """The inverse of MaxPool1d(return_indices=True): see gt.nn.functional.max_unpool1d."""
    _n = 1


class MaxUnpool2d(_MaxUnpoolNd):
    """The inverse of MaxPool2d(return_indices=True): see gt.nn.functional.max_unpool2d."""
    _n = 2


class MaxUnpool3d(_MaxUnpoolNd):
    """The inverse of MaxPool3d(return_indices=True): see gt.nn.functional.max_unpool3d."""
    _n = 3


class OptimizedModule(Module):
    """What gt.compile(model) returns, as torch._dynamo.eval_frame.OptimizedModule: the model
    as its submodule `_orig_mod` (so state_dict keys start with "_orig_mod.", as a PyTorch
    compiled model's do), calls forwarded to it, and any attribute the wrapper does not have
    read from the model (compiled.configure_optimizers(...), compiled.config)."""

    def __init__(self, mod):
        super().__init__()
        self._orig_mod = mod

    def forward(self, *args, **kwargs):
        return self._orig_mod(*args, **kwargs)

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            modules = self.__dict__.get("_modules")
            if modules is None or "_orig_mod" not in modules:
                raise
            return getattr(modules["_orig_mod"], name)


def _ones_and_zeros(self):
    """weight ones, bias zeros (those there are), as the norms' reset_parameters in PyTorch."""
    if getattr(self, "weight", None) is not None:
        init.ones_(self.weight)
    if getattr(self, "bias", None) is not None:
        init.zeros_(self.bias)


def _norm_base_reset(self):
    """The running statistics reset, weight ones, bias zeros (PyTorch's _NormBase)."""
    self.reset_running_stats()
    _ones_and_zeros(self)


def _embedding_bag_reset(self):
    """weight ~ N(0, 1), its padding_idx row zero."""
    Embedding.reset_parameters(self)


LayerNorm.reset_parameters = GroupNorm.reset_parameters = RMSNorm.reset_parameters = _ones_and_zeros
_NormBase.reset_parameters = _norm_base_reset
EmbeddingBag.reset_parameters = _embedding_bag_reset
