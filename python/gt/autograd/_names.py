"""PyTorch's grad_fn names for GT's functions whose last recorded op is not PyTorch's.

`print(loss)` shows `tensor(2.3026, grad_fn=<NllLossBackward0>)` in PyTorch, and tutorials
print `loss.grad_fn` and walk `next_functions`. GT builds many functions out of other ops
(`cross_entropy` is a log-softmax, a gather and a mean; `unsqueeze` is a reshape), so the node
that made a result is named after GT's last op. Each function below names the node it made
after the op PyTorch records (names from PyTorch 2.15's `y.grad_fn.name()` on CPU), and
`primitive_name` renames GT primitives PyTorch spells differently (concat: Cat). A node the
function did not make (it returned an input, as `x[:, :]` or `dropout(p=0)` do) keeps its name.
Only the name changes: the graph (`next_functions`) stays GT's.
"""
import functools


def _arg(args, kwargs, i, name, default=None):
    """The call's argument `name` (positional index i), else `default`."""
    if name in kwargs:
        return kwargs[name]
    return args[i] if len(args) > i else default


def _ndim(t):
    return getattr(t, "ndim", 0)


# ---------------------------------------------------------------- rules: (args, kwargs) -> name

def _squeeze(args, kwargs):
    dim = _arg(args, kwargs, 1, "dim")
    return "SqueezeBackward0" if dim is None else "SqueezeBackward1" if isinstance(dim, int) else "SqueezeBackward2"


_MATMUL = {(1, 1): "DotBackward0", (2, 1): "MvBackward0", (1, 2): "SqueezeBackward4", (2, 2): "MmBackward0"}


def _matmul(args, kwargs):
    """(GT's matmul node names itself from its inputs' ranks: Node.name, primitive_name)"""
    a, b = _ndim(args[0]), _ndim(_arg(args, kwargs, 1, "other"))
    return _MATMUL.get((a, b), "UnsafeViewBackward0" if a >= 3 else "CloneBackward0" if b >= 3 else None)


def _linear(args, kwargs):
    bias = _arg(args, kwargs, 2, "bias")
    n = _ndim(args[0])
    if n == 2:
        return "AddmmBackward0" if bias is not None else "MmBackward0"
    return "SqueezeBackward4" if n == 1 and bias is None else "UnsafeViewBackward0"


def _nll(args, kwargs, input_name="input", target_name="target"):
    x, target = _arg(args, kwargs, 0, input_name), _arg(args, kwargs, 1, target_name)
    if getattr(getattr(target, "dtype", None), "is_floating_point", False):
        return None  # probability targets: a sum of products, as GT's
    if kwargs.get("label_smoothing", 0.0):
        return "AddBackward0"
    return "NllLoss2DBackward0" if _ndim(x) > 2 else "NllLossBackward0"


def _pad(args, kwargs):
    mode = _arg(args, kwargs, 2, "mode", "constant")
    n = len(_arg(args, kwargs, 1, "pad", ())) // 2
    if mode == "constant":
        return "ConstantPadNdBackward0"
    kind = {"reflect": "Reflection", "replicate": "Replication"}.get(mode)
    return f"{kind}Pad{n}DBackward0" if kind and 1 <= n <= 3 else None


def _interpolate(args, kwargs):
    mode = _arg(args, kwargs, 3, "mode", "nearest")
    n = _ndim(args[0]) - 2
    kind = {"nearest": "Nearest", "nearest-exact": "NearestExact", "linear": "Linear", "bilinear": "Bilinear",
            "bicubic": "Bicubic", "trilinear": "Trilinear"}.get(mode)
    if kind is None or not 1 <= n <= 3:
        return None
    return ("_" if kind == "NearestExact" else "") + f"Upsample{kind}{n}DBackward0"


def _adaptive_avg_pool2d(args, kwargs):
    size = _arg(args, kwargs, 1, "output_size")
    return "MeanBackward1" if size in (1, (1, 1), [1, 1]) else "AdaptiveAvgPool2DBackward0"


def _vector_norm(args, kwargs):
    p = _arg(args, kwargs, 1, "p", 2)
    return "LinalgVectorNormBackward0" if p is None or isinstance(p, (int, float)) else None


def _getitem(args, kwargs):
    """PyTorch indexes left to right: the last basic index names the node (an int Select, a
    slice Slice, None Unsqueeze); a tensor, list, array or bool index makes it Index."""
    key = args[1]
    name = None
    for k in key if isinstance(key, tuple) else (key,):
        if k is None:
            name = "UnsqueezeBackward0"
        elif k is Ellipsis:
            continue
        elif isinstance(k, slice):
            name = "SliceBackward0" if k != slice(None) else name
        elif isinstance(k, bool) or hasattr(k, "__len__") or getattr(k, "ndim", 0) != 0:
            return "IndexBackward0"
        else:  # an int, a NumPy integer or a 0-d integer tensor
            name = "SelectBackward0"
    return name


def _repeat_interleave(args, kwargs):
    return "ViewBackward0" if isinstance(_arg(args, kwargs, 1, "repeats"), int) else None


def _pow(args, kwargs):
    return "PowBackward1" if hasattr(_arg(args, kwargs, 1, "exponent"), "_node") else "PowBackward0"


def _max_min(kind):
    """x.max(): MaxBackward1; x.max(dim): MaxBackward0 (its values); max(x, y): Maximum."""
    def rule(args, kwargs):
        dim = _arg(args, kwargs, 1, "dim")
        if hasattr(dim, "shape"):
            return f"{kind}imumBackward0"
        return f"{kind}Backward1" if dim is None and kwargs.get("axis") is None else f"{kind}Backward0"
    return rule


# (owner, attribute, name or rule). Owners: "gt" (torch), "F" (torch.nn.functional), "Tensor",
# "linalg". Every binding of the same function object in GT's modules is replaced too.
_NAMES = [
    # losses
    ("F", "cross_entropy", _nll), ("F", "nll_loss", _nll), ("F", "mse_loss", "MseLossBackward0"),
    ("F", "binary_cross_entropy", "BinaryCrossEntropyBackward0"),
    ("F", "binary_cross_entropy_with_logits", "BinaryCrossEntropyWithLogitsBackward0"),
    ("F", "smooth_l1_loss", "SmoothL1LossBackward0"), ("F", "huber_loss", "HuberLossBackward0"),
    # layers
    ("F", "linear", _linear), ("F", "embedding", "EmbeddingBackward0"), ("F", "dropout", "MulBackward0"),
    ("F", "layer_norm", "NativeLayerNormBackward0"), ("F", "group_norm", "NativeGroupNormBackward0"),
    ("F", "batch_norm", "NativeBatchNormBackward0"), ("F", "pad", _pad), ("F", "interpolate", _interpolate),
    ("F", "max_pool1d", "SqueezeBackward1"), ("F", "max_pool2d", "MaxPool2DWithIndicesBackward0"),
    ("F", "max_pool3d", "MaxPool3DWithIndicesBackward0"), ("F", "avg_pool1d", "SqueezeBackward1"),
    ("F", "avg_pool2d", "AvgPool2DBackward0"), ("F", "avg_pool3d", "AvgPool3DBackward0"),
    ("F", "adaptive_avg_pool2d", _adaptive_avg_pool2d),
    # activations (a float16/bfloat16 input's result is a cast of the float32 one: _rounded_once)
    ("gt", "softmax", "SoftmaxBackward0"), ("Tensor", "softmax", "SoftmaxBackward0"), ("F", "softmax", "SoftmaxBackward0"),
    ("gt", "log_softmax", "LogSoftmaxBackward0"), ("Tensor", "log_softmax", "LogSoftmaxBackward0"),
    ("F", "log_softmax", "LogSoftmaxBackward0"), ("gt", "gelu", "GeluBackward0"), ("F", "gelu", "GeluBackward0"),
    ("F", "silu", "SiluBackward0"), ("gt", "silu", "SiluBackward0"), ("F", "hardswish", "HardswishBackward0"),
    ("F", "logsigmoid", "LogSigmoidBackward0"), ("F", "selu", "EluBackward0"), ("F", "celu", "CeluBackward0"),
    ("F", "hardsigmoid", "HardsigmoidBackward0"), ("F", "relu6", "HardtanhBackward0"),
    ("F", "hardtanh", "HardtanhBackward0"), ("F", "softplus", "SoftplusBackward0"),
    ("F", "leaky_relu", "LeakyReluBackward0"), ("F", "elu", "EluBackward0"), ("F", "mish", "MishBackward0"),
    ("F", "glu", "GluBackward0"), ("F", "prelu", "PreluKernelBackward0"),
    # matrix products
    ("gt", "mm", "MmBackward0"), ("Tensor", "mm", "MmBackward0"), ("gt", "bmm", "BmmBackward0"),
    ("Tensor", "bmm", "BmmBackward0"), ("gt", "addmm", "AddmmBackward0"), ("Tensor", "addmm", "AddmmBackward0"),
    ("gt", "baddbmm", "BaddbmmBackward0"), ("Tensor", "baddbmm", "BaddbmmBackward0"),
    # reductions
    ("gt", "max", _max_min("Max")), ("Tensor", "max", _max_min("Max")),
    ("gt", "min", _max_min("Min")), ("Tensor", "min", _max_min("Min")),
    ("gt", "amax", "AmaxBackward0"), ("Tensor", "amax", "AmaxBackward0"),
    ("gt", "amin", "AminBackward0"), ("Tensor", "amin", "AminBackward0"),
    ("gt", "std", "StdBackward0"), ("Tensor", "std", "StdBackward0"),
    ("gt", "var", "VarBackward0"), ("Tensor", "var", "VarBackward0"),
    ("gt", "dist", "DistBackward0"), ("Tensor", "dist", "DistBackward0"),
    ("gt", "logsumexp", "LogsumexpBackward0"), ("Tensor", "logsumexp", "LogsumexpBackward0"),
    ("gt", "norm", _vector_norm), ("Tensor", "norm", _vector_norm),
    ("linalg", "vector_norm", "LinalgVectorNormBackward0"),
    # elementwise
    ("gt", "clamp", "ClampBackward1"), ("Tensor", "clamp", "ClampBackward1"),
    ("gt", "clip", "ClampBackward1"), ("Tensor", "clip", "ClampBackward1"),
    ("gt", "clamp_min", "ClampMinBackward0"), ("Tensor", "clamp_min", "ClampMinBackward0"),
    ("gt", "clamp_max", "ClampMaxBackward0"), ("Tensor", "clamp_max", "ClampMaxBackward0"),
    ("gt", "masked_fill", "MaskedFillBackward0"), ("Tensor", "masked_fill", "MaskedFillBackward0"),
    ("gt", "lerp", "LerpBackward0"), ("Tensor", "lerp", "LerpBackward0"),
    ("gt", "pow", _pow), ("Tensor", "pow", _pow), ("Tensor", "__pow__", _pow),
    ("Tensor", "__rpow__", "PowBackward2"), ("Tensor", "__rsub__", "RsubBackward1"),
    ("Tensor", "__rtruediv__", "MulBackward0"), ("gt", "square", "PowBackward0"), ("Tensor", "square", "PowBackward0"),
    # layout
    ("Tensor", "__getitem__", _getitem),
    ("gt", "unsqueeze", "UnsqueezeBackward0"), ("Tensor", "unsqueeze", "UnsqueezeBackward0"),
    ("gt", "squeeze", _squeeze), ("Tensor", "squeeze", _squeeze),
    ("gt", "permute", "PermuteBackward0"), ("Tensor", "permute", "PermuteBackward0"),
    ("Tensor", "T", "PermuteBackward0"), ("gt", "t", "TBackward0"), ("Tensor", "t", "TBackward0"),
    ("gt", "transpose", "TransposeBackward0"), ("Tensor", "transpose", "TransposeBackward0"),
    ("gt", "swapaxes", "TransposeBackward0"), ("Tensor", "swapaxes", "TransposeBackward0"),
    ("Tensor", "mT", "TransposeBackward0"), ("gt", "clone", "CloneBackward0"), ("Tensor", "clone", "CloneBackward0"),
    ("gt", "topk", "TopkBackward0"), ("Tensor", "topk", "TopkBackward0"),
    ("gt", "sort", "SortBackward0"), ("Tensor", "sort", "SortBackward0"),
    ("gt", "stack", "StackBackward0"), ("Tensor", "repeat", "RepeatBackward0"),
    ("gt", "repeat_interleave", _repeat_interleave), ("Tensor", "repeat_interleave", _repeat_interleave),
    ("gt", "roll", "RollBackward0"), ("Tensor", "roll", "RollBackward0"),
    ("gt", "diagonal", "DiagonalBackward0"), ("Tensor", "diagonal", "DiagonalBackward0"),
    ("gt", "split", "SplitBackward0"), ("Tensor", "split", "SplitBackward0"),
    ("gt", "chunk", "SplitBackward0"), ("Tensor", "chunk", "SplitBackward0"),
    ("gt", "unbind", "UnbindBackward0"), ("Tensor", "unbind", "UnbindBackward0"),
]

# GT primitives whose PyTorch op has another name (Node.name)
_PRIMITIVES = {"concat": "Cat", "reshape": "View", "broadcast_to": "Expand", "cast": "ToCopy", "identity": "Clone"}


def primitive_name(op, inputs, attrs):
    """PyTorch's name for the node of GT primitive `op` with these inputs and attributes, where
    it differs from GT's ("ConcatBackward0": "CatBackward0"), else None. Worked out when a name
    is asked for, not when the op runs (sum and mean: SumBackward1 once some axis is kept)."""
    if op == "matmul" and inputs and len(inputs) == 2:
        return _matmul(tuple(inputs), {})
    if op in ("sum", "mean") and attrs is not None and inputs:
        kept = attrs.get("keepdims") or len(attrs.get("axes") or ()) < _ndim(inputs[0])
        return op.capitalize() + ("Backward1" if kept else "Backward0")
    spelled = _PRIMITIVES.get(op)
    return spelled + "Backward0" if spelled else None


_Tensor = None  # gt.Tensor (install sets it)


def _name_outputs(out, name, args):
    """Gives `name` to the node of each output the call made (not one of its inputs')."""
    if isinstance(out, _Tensor):
        outs = (out,)
    elif isinstance(out, (tuple, list)):
        outs = out
    else:
        return
    for o in outs:
        node = o._node if isinstance(o, _Tensor) else None
        if node is None:
            continue
        for a in args:
            if isinstance(a, _Tensor) and a._node is node:
                break
        else:
            node.given_name = name


def _named(fn, rule):
    if isinstance(rule, str):
        @functools.wraps(fn)
        def named(*args, **kwargs):
            out = fn(*args, **kwargs)
            if type(out) is _Tensor:  # (the common case, inline: this runs on every call)
                node = out._node
                if node is not None:
                    for a in args:
                        if type(a) is _Tensor and a._node is node:
                            break
                    else:
                        node.given_name = rule
            else:
                _name_outputs(out, rule, args)
            return out
    else:
        @functools.wraps(fn)
        def named(*args, **kwargs):
            out = fn(*args, **kwargs)
            if type(out) is _Tensor and out._node is None:
                return out
            name = rule(args, kwargs)
            if name is not None:
                _name_outputs(out, name, args)
            return out
    named._gt_names_rule = rule
    return named


def install():
    """Wraps every function of _NAMES, wherever GT's modules and Tensor bind it."""
    import gt
    global _Tensor
    from .. import _rebind, _tensor
    _Tensor = _tensor.Tensor
    owners = {"gt": gt, "F": gt.nn.functional, "Tensor": _tensor.Tensor, "linalg": gt.linalg}
    _rebind.rebind(_NAMES, _named, owners)
