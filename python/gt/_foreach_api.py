"""torch._foreach_*: an op over lists of tensors (optimizers written outside torch.optim, soft
target-network updates: `torch._foreach_lerp_(target_params, params, tau)`). Each is the op of
its name applied to every tensor in turn; the in-place forms (ending in _) write each tensor
and return None, the others return the list of results. `other` may be a number, a tensor
(used for every element) or a list (one per tensor)."""

_BINARY = ("add", "sub", "mul", "div", "maximum", "minimum", "pow")
_UNARY = ("neg", "exp", "log", "sqrt", "abs", "sigmoid", "tanh", "reciprocal", "sign", "floor", "ceil", "round",
          "sin", "cos", "zero")


def _each(other, n):
    return other if isinstance(other, (list, tuple)) else [other] * n


def _binary(name):
    def out_of_place(self, other, alpha=None):
        others = _each(other, len(self))
        if alpha is not None:
            return [getattr(t, name)(o, alpha=alpha) for t, o in zip(self, others)]
        return [getattr(t, name)(o) for t, o in zip(self, others)]

    def in_place(self, other, alpha=None):
        others = _each(other, len(self))
        for t, o in zip(self, others):
            getattr(t, name + "_")(o, alpha=alpha) if alpha is not None else getattr(t, name + "_")(o)
    return out_of_place, in_place


def _unary(name):
    def out_of_place(self):
        return [getattr(t, name)() for t in self]

    def in_place(self):
        for t in self:
            getattr(t, name + "_")()
    return out_of_place, in_place


def _foreach_lerp(self, tensors1, weight):
    return [t.lerp(e, w) for t, e, w in zip(self, tensors1, _each(weight, len(self)))]


def _foreach_lerp_(self, tensors1, weight):
    for t, e, w in zip(self, tensors1, _each(weight, len(self))):
        t.lerp_(e, w)


def _foreach_addcmul(self, tensor1, tensor2, value=1):
    return [t.addcmul(a, b, value=v) for t, a, b, v in zip(self, tensor1, tensor2, _each(value, len(self)))]


def _foreach_addcmul_(self, tensor1, tensor2, value=1):
    for t, a, b, v in zip(self, tensor1, tensor2, _each(value, len(self))):
        t.addcmul_(a, b, value=v)


def _foreach_addcdiv(self, tensor1, tensor2, value=1):
    return [t.addcdiv(a, b, value=v) for t, a, b, v in zip(self, tensor1, tensor2, _each(value, len(self)))]


def _foreach_addcdiv_(self, tensor1, tensor2, value=1):
    for t, a, b, v in zip(self, tensor1, tensor2, _each(value, len(self))):
        t.addcdiv_(a, b, value=v)


def _foreach_copy_(self, src, non_blocking=False):
    for t, s in zip(self, src):
        t.copy_(s)


def _foreach_norm(self, ord=2, dtype=None):
    from . import linalg
    return [linalg.vector_norm(t, ord, dtype=dtype) for t in self]


def _install(namespace):
    for name in _BINARY:
        namespace[f"_foreach_{name}"], namespace[f"_foreach_{name}_"] = _binary(name)
    for name in _UNARY:
        out_of_place, in_place = _unary(name)
        if name != "zero":
            namespace[f"_foreach_{name}"] = out_of_place
        namespace[f"_foreach_{name}_"] = in_place
    for name, fn in list(globals().items()):
        if name.startswith("_foreach_"):
            namespace[name] = fn
