"""torch.fx, as far as GT goes: `wrap`, which libraries call at import to mark a function as a
leaf of symbolic tracing (timm's layers), returns what it is given. GT does not trace Python
into graphs (its own capture is the dispatcher's, docs/jit.md): symbolic_trace raises
NotImplementedError."""


def wrap(fn_or_name):
    """fn_or_name itself (a function, or a function's name): there is no tracer to mark it for."""
    return fn_or_name


def symbolic_trace(root, concrete_args=None):
    """Raises NotImplementedError: GT does not trace Python functions or modules into graphs."""
    raise NotImplementedError("torch.fx.symbolic_trace: GT does not trace Python into graphs (its dispatcher "
                              "captures the ops a program issues: docs/jit.md)")


def _graph_module_base():
    from .nn import Module
    return Module


class GraphModule(_graph_module_base()):
    """torch.fx.GraphModule (an nn.Module, as PyTorch's: e3nn subclasses it at import): exists
    for annotations, subclassing and isinstance checks; making one raises NotImplementedError
    (GT does not trace Python into graphs)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("torch.fx.GraphModule: GT does not trace Python into graphs (docs/jit.md)")


class Graph:
    """torch.fx.Graph: making one raises NotImplementedError (see GraphModule)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("torch.fx.Graph: GT does not trace Python into graphs (docs/jit.md)")


class Tracer:
    """torch.fx.Tracer (see GraphModule)."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("torch.fx.Tracer: GT does not trace Python into graphs (docs/jit.md)")
