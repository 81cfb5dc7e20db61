"""gt.jit: accepts what scripts decorate or call for TorchScript, and compiles nothing itself.

GT fuses and compiles hot regions of every program on its own (docs/jit.md); `script` and
`trace` return their argument unchanged (as gt.compile does), so code written for TorchScript
runs as ordinary GT code. There is no TorchScript file format: `save` and `load` raise."""


def script(obj=None, *args, **kwargs):
    """Returns obj unchanged (a function, a module or a class)."""
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    """Returns func unchanged (example_inputs are not run)."""
    return func


def ignore(drop=False, **kwargs):
    """@gt.jit.ignore or @gt.jit.ignore(drop=...): the function unchanged."""
    if callable(drop):
        return drop
    return lambda fn: fn


unused = ignore
export = script


class TracerWarning(Warning):
    """torch.jit.TracerWarning: the warning category of tracing (GT does not trace; libraries filter
    it: ultralytics' warnings.filterwarnings("ignore", category=torch.jit.TracerWarning))."""


def freeze(mod, preserved_attrs=None, optimize_numerics=True):
    """Returns mod unchanged (GT's compiled regions take the weights as operands already)."""
    return mod


def optimize_for_inference(mod, other_methods=None):
    """Returns mod unchanged."""
    return mod


def enable_onednn_fusion(enabled):
    """Accepted: GT's CPU worker runs convolutions through oneDNN already (docs/jit.md)."""


def onednn_fusion_enabled():
    return True


def is_scripting():
    """False: GT never runs TorchScript."""
    return False


def is_tracing():
    """False."""
    return False


def save(*args, **kwargs):
    raise NotImplementedError("gt.jit.save: GT has no TorchScript format; save the state_dict with gt.save")


def load(*args, **kwargs):
    raise NotImplementedError("gt.jit.load: GT cannot load TorchScript files; load a state_dict with gt.load")


def annotate(the_type, the_value):
    """the_value itself (TorchScript's type hint for an empty container, as torch.jit.annotate)."""
    return the_value


def _script_module_base():
    from .nn.modules import Module

    class ScriptModule(Module):
        """torch.jit.ScriptModule: what torch.jit.script returns in PyTorch. GT's script()
        returns its argument, so no object is one; the class exists for isinstance checks and
        annotations."""

    class ScriptFunction:
        """torch.jit.ScriptFunction (see ScriptModule)."""
    return ScriptModule, ScriptFunction


def __getattr__(name):  # (made on first use: gt.nn imports this module's importer)
    if name in ("ScriptModule", "ScriptFunction", "RecursiveScriptModule"):
        module, function = _script_module_base()
        globals().update(ScriptModule=module, RecursiveScriptModule=module, ScriptFunction=function)
        return globals()[name]
    raise AttributeError(f"module 'gt.jit' has no attribute '{name}'")


# TorchScript's type annotations, for code that writes them (timm: `fused_attn: Final[bool]`):
# typing's own, as PyTorch's are.
from typing import Final  # noqa: E402,F401
import sys as _sys  # noqa: E402
import types as _types  # noqa: E402
import typing as _typing  # noqa: E402

__path__ = []  # (a package, so that `import torch.jit.annotations` finds the module below)
annotations = _types.ModuleType("gt.jit.annotations", "torch.jit.annotations: typing's names (List, Tuple, Optional...).")
annotations.__dict__.update({n: getattr(_typing, n) for n in ("Any", "Dict", "List", "Optional", "Tuple", "Union",
                                                               "Callable", "Final")})
_sys.modules[annotations.__name__] = annotations


def interface(obj):
    """obj itself (TorchScript's interface decorator: nothing to compile here)."""
    return obj


def unused(fn):
    """fn itself (TorchScript's @torch.jit.unused: nothing is compiled here)."""
    return fn


def export(fn):
    """fn itself (TorchScript's @torch.jit.export)."""
    return fn


def isinstance(obj, target_type):
    """Whether obj is of target_type, which may be a typing form (List[int], Dict[str, Tensor],
    Optional[T], Tuple[...], Union[...]), checking the elements too, as torch.jit.isinstance."""
    import builtins
    origin, args = _typing.get_origin(target_type), _typing.get_args(target_type)
    if origin is None:
        return target_type is _typing.Any or builtins.isinstance(obj, target_type)
    if origin is _typing.Union or (_types.UnionType is not None and origin is _types.UnionType):
        return any(isinstance(obj, a) for a in args)
    if not builtins.isinstance(obj, origin):
        return False
    if origin in (list, set, frozenset) and args:
        return all(isinstance(v, args[0]) for v in obj)
    if origin is dict and args:
        return all(isinstance(k, args[0]) and isinstance(v, args[1]) for k, v in obj.items())
    if origin is tuple and args:
        if len(args) == 2 and args[1] is Ellipsis:
            return all(isinstance(v, args[0]) for v in obj)
        return len(obj) == len(args) and all(isinstance(v, a) for v, a in zip(obj, args))
    return True
