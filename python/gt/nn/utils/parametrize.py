"""gt.nn.utils.parametrize, as torch.nn.utils.parametrize: a module's tensor computed from other
tensors by a parametrization (a Module) each time it is read.

`register_parametrization(module, "weight", P())` moves `module.weight` to
`module.parametrizations.weight.original` (or `original0`, `original1`, ... when P's
`right_inverse` returns several tensors: weight norm's g and v) and makes `module.weight` a
property that returns `P()(original)`; several parametrizations of one tensor apply in the order
registered. The state_dict keys are PyTorch's (`parametrizations.weight.original0`, a
parametrization's own buffers under `parametrizations.weight.0.`), so checkpoints load either way.
Inside `with cached():` each parametrized tensor is computed once.
"""
import contextlib

from ... import _functions as T
from ...autograd import no_grad
from ..modules import ModuleDict, ModuleList, Parameter

_cache_enabled = 0
_cache = {}


@contextlib.contextmanager
def cached():
    """Within the block, each parametrized tensor is computed once and reused (as PyTorch's)."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor (a ModuleList, applied in order) and the tensor(s) they
    start from: `original`, or `original0`, `original1`, ... when the first parametrization's
    right_inverse gives a tuple."""

    def __init__(self, modules, original, unsafe=False):
        super().__init__(modules)
        self.unsafe = unsafe
        first = modules[0]
        with no_grad():
            value = original
            if hasattr(first, "right_inverse"):
                try:
                    value = first.right_inverse(original)
                except NotImplementedError:  # (the identity, as PyTorch's: orthogonal without trivialization)
                    pass
        self.is_tensor = isinstance(value, T.Tensor)
        values = [value] if self.is_tensor else list(value)
        for i, v in enumerate(values):
            name = "original" if self.is_tensor else f"original{i}"
            if isinstance(original, Parameter) or original.requires_grad:
                setattr(self, name, Parameter(v.detach().clone() if v is not original else v.detach(),
                                              requires_grad=original.requires_grad))
            else:
                self.register_buffer(name, v)
        self.ntensors = len(values)

    def originals(self):
        if self.is_tensor:
            return (self.original,)
        return tuple(getattr(self, f"original{i}") for i in range(self.ntensors))

    def forward(self):
        x = self[0](*self.originals())
        for p in list(self)[1:]:
            x = p(x)
        return x

    def right_inverse(self, value):
        """Sets the originals so that forward() gives `value` (each parametrization's
        right_inverse, last first); RuntimeError if one has none."""
        with no_grad():
            for p in reversed(list(self)):
                if not hasattr(p, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(p).__name__} does not implement right_inverse")
                value = p.right_inverse(value)
            values = [value] if self.is_tensor else list(value)
            for o, v in zip(self.originals(), values):
                o.copy_(v)


def _parametrized_class(module):
    """A subclass of module's class (made once per module) whose properties compute the
    parametrized tensors."""
    cls = module.__class__
    if getattr(cls, "_gt_parametrized", False):
        return cls
    return type(f"Parametrized{cls.__name__}", (cls,), {"_gt_parametrized": True, "_gt_base": cls})


def _property(name):
    def get(self):
        plist = self.parametrizations[name]
        if _cache_enabled:
            key = (id(self), name)
            if key not in _cache:
                _cache[key] = plist()
            return _cache[key]
        return plist()

    def set(self, value):
        self.parametrizations[name].right_inverse(value)
    return property(get, set)


def register_parametrization(module, tensor_name, parametrization, *, unsafe=False):
    """Parametrizes `module.<tensor_name>` (a parameter or buffer) by `parametrization` (a
    Module whose forward maps the stored tensor(s) to the value; an optional `right_inverse`
    maps a value back). A second call for the same tensor appends to its list. Unless `unsafe`,
    the parametrization is evaluated once here, as PyTorch's does, and must keep the tensor's
    shape and dtype. Returns module. Raises ValueError when the module has no such parameter or
    buffer, or when the parametrization changes the shape or dtype or returns no tensor."""
    if is_parametrized(module, tensor_name):
        if not unsafe:
            with no_grad():
                before = getattr(module, tensor_name)
                _check_unchanged(before, parametrization(before))
        module.parametrizations[tensor_name].append(parametrization)
        return module
    if tensor_name in module._parameters:
        original = module._parameters.pop(tensor_name)
    elif tensor_name in module._buffers:
        original = module._buffers.pop(tensor_name)
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a parametrized element with "
                         f"name '{tensor_name}'")
    module.__dict__.pop(tensor_name, None)
    try:
        plist = ParametrizationList([parametrization], original, unsafe=unsafe)
        if not unsafe:
            with no_grad():
                _check_unchanged(original, plist())
    except Exception:  # the module as it was
        (module._parameters if isinstance(original, Parameter) else module._buffers)[tensor_name] = original
        raise
    if not hasattr(module, "parametrizations") or not isinstance(module.__dict__.get("parametrizations"), ModuleDict):
        module.parametrizations = ModuleDict()
        module.__class__ = _parametrized_class(module)
    module.parametrizations[tensor_name] = plist
    setattr(module.__class__, tensor_name, _property(tensor_name))
    return module


def _check_unchanged(original, value):
    """PyTorch's checks of a parametrization's value at registration (ValueError)."""
    if not isinstance(value, T.Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(value).__name__}.")
    for what, a, b in (("dtype", original.dtype, value.dtype), ("shape", original.shape, value.shape)):
        if a != b:
            raise ValueError(f"Registering a parametrization may not change the {what} of the tensor, unless `unsafe` "
                             f"flag is enabled.\nunparametrized {what}: {a}\nparametrized {what}: {b}")


def type_before_parametrizations(module):
    """The module's class before register_parametrization made it a subclass (its class when it
    has no parametrizations), as torch.nn.utils.parametrize.type_before_parametrizations."""
    cls = type(module)
    return cls._gt_base if getattr(cls, "_gt_parametrized", False) else cls


def is_parametrized(module, tensor_name=None):
    """Whether module has a parametrization (of `tensor_name`, when given)."""
    plists = module.__dict__.get("parametrizations")
    if not isinstance(plists, ModuleDict):
        return False
    return tensor_name is None or tensor_name in plists


def remove_parametrizations(module, tensor_name, leave_parametrized=True):
    """Removes the parametrizations of `module.<tensor_name>`: it becomes a plain parameter
    holding the parametrized value (leave_parametrized) or the original. Returns module; raises
    ValueError if it has none."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    plist = module.parametrizations[tensor_name]
    with no_grad():
        if leave_parametrized:
            value = plist()
        elif plist.is_tensor:
            value = plist.original
        else:
            raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor that is parametrized "
                             "in terms of a sequence of tensors.")
    requires_grad = plist.originals()[0].requires_grad
    del module.parametrizations[tensor_name]
    delattr(module.__class__, tensor_name)
    setattr(module, tensor_name, Parameter(value.detach(), requires_grad=requires_grad))
    if not len(module.parametrizations):
        module._modules.pop("parametrizations", None)
        module.__dict__.pop("parametrizations", None)
        module.__class__ = module.__class__._gt_base
    return module
