"""gt.nn.utils.prune, as torch.nn.utils.prune: zero out some entries of a module's tensor with a
mask, and keep them zero through training.

Pruning `module.weight` moves the parameter to `module.weight_orig`, adds a buffer
`module.weight_mask` (1 keeps an entry, 0 prunes it) and a forward pre-hook that sets
`module.weight = weight_orig * weight_mask` before each forward, so the gradient reaches
`weight_orig` only through the kept entries. The state_dict keys are PyTorch's (`weight_orig`,
`weight_mask`). Pruning the same tensor again prunes among the entries still kept (amounts are
fractions of those, as PyTorch's `PruningContainer`); `remove(module, "weight")` makes the pruned
tensor the parameter again. Methods: `identity`, `random_unstructured`, `l1_unstructured`,
`random_structured`, `ln_structured`, `global_unstructured`, `custom_from_mask`.

`amount` is a fraction in [0, 1] of the entries (or channels) to prune, rounded to the nearest
count, or a count (a non-negative int). Computing a mask reads the number of entries still kept
(one sync); the masks stay on the workers.

Errors, as PyTorch's: TypeError for an `amount` that is neither int nor float; ValueError for a
negative count, a fraction outside [0, 1], more entries than the tensor has, an `importance_scores`
of another shape, or `remove` of a tensor that is not pruned.
"""
import numbers
from abc import ABC, abstractmethod

from ... import _functions as T
from ..._sorting import topk as _topk
from ...autograd import no_grad


def _validate_amount(amount):
    if not isinstance(amount, numbers.Real) or isinstance(amount, bool):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a non-negative integer")


def _count(amount, size):
    """The number of entries (or channels) to prune of `size`."""
    if isinstance(amount, numbers.Integral):
        if amount > size:
            raise ValueError(f"amount={amount} should be smaller than the number of parameters to prune={size}")
        return int(amount)
    return int(round(float(amount) * size))


def _kept(mask):
    """How many entries of `mask` are still 1 (reads it back: one sync)."""
    return int(round(float(T.sum(mask.float()).item())))


class BasePruningMethod(ABC):
    """A pruning method: compute_mask(t, default_mask) gives the new mask of tensor `t`, where
    `default_mask` holds what earlier pruning kept; apply(module, name, ...) prunes
    module.<name> with it. A method is also the forward pre-hook that recomputes the tensor."""

    PRUNING_TYPE = None  # "unstructured", "structured" or "global"
    _tensor_name = None

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask (same shape as `t`) of `t`'s entries to keep, given the mask so far."""

    def apply_mask(self, module):
        """module.<name>_orig * module.<name>_mask."""
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return mask.to(orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prunes module.<name> with a new `cls(*args, **kwargs)`, combined with any earlier
        pruning of it; returns the method (the forward pre-hook now on `module`). The mask is
        computed before the module changes, so a bad argument leaves it as it was."""
        method = cls(*args, **kwargs)
        method._tensor_name = name
        hooks = _pre_hooks(module)
        old_key, old = next(((k, h) for k, h in hooks.items()
                             if isinstance(h, BasePruningMethod) and h._tensor_name == name), (None, None))
        if old is not None:
            container = old if isinstance(old, PruningContainer) else PruningContainer(old)
            container.add_pruning_method(method)
            method = container
        orig = getattr(module, name)
        scores = orig if importance_scores is None else importance_scores
        if tuple(scores.shape) != tuple(orig.shape):
            raise ValueError(f"importance_scores should have the same shape as parameter {name} of {module}")
        default_mask = T.ones_like(orig) if old is None else getattr(module, name + "_mask").detach().clone()
        with no_grad():
            mask = method.compute_mask(scores.detach(), default_mask=default_mask)
        if old is None:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
        else:
            del hooks[old_key]
        module.register_buffer(name + "_mask", mask)
        setattr(module, name, method.apply_mask(module))
        module.register_forward_pre_hook(method)
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """t with this method's mask applied (a new tensor; nothing is registered)."""
        scores = t if importance_scores is None else importance_scores
        mask = self.compute_mask(scores, default_mask=T.ones_like(t) if default_mask is None else default_mask)
        return t * mask

    def remove(self, module):
        """Makes the pruning permanent: module.<name> is the parameter <name>_orig was (the same
        object, so an optimizer holding it goes on updating it), now holding orig * mask; the
        names <name>_orig and <name>_mask go."""
        with no_grad():
            weight = self.apply_mask(module)
        orig = module._parameters[self._tensor_name + "_orig"]
        delattr(module, self._tensor_name)
        del module._parameters[self._tensor_name + "_orig"]  # (the attributes go with the entries)
        del module._buffers[self._tensor_name + "_mask"]
        orig.data = weight.detach()
        setattr(module, self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """Successive pruning of one tensor: each new method prunes among what the others kept."""

    def __init__(self, *methods):
        self._pruning_methods = ()
        for m in methods:
            self.add_pruning_method(m)

    def add_pruning_method(self, method):
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and self._tensor_name is not None and method._tensor_name != self._tensor_name:
            raise ValueError(f"Can only add pruning methods acting on the parameter named '{self._tensor_name}' "
                             f"to PruningContainer. Found '{method._tensor_name}'")
        if method is not None:
            self._tensor_name = method._tensor_name
            self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, i):
        return self._pruning_methods[i]

    def compute_mask(self, t, default_mask):
        # Every method's compute_mask prunes among what default_mask keeps.
        return self._pruning_methods[-1].compute_mask(t, default_mask)


class Identity(BasePruningMethod):
    """Prunes nothing (the mask is all ones)."""
    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


def _zero_lowest(scores, default_mask, k, largest_pruned=False):
    """default_mask with the k entries of lowest `scores` among those it keeps set to 0 (the k
    highest with largest_pruned)."""
    mask = default_mask.clone()
    if k == 0:
        return mask
    flat = scores.reshape(-1)
    flat = flat if flat.dtype.is_floating_point else flat.float()  # (float64 scores ranked in float64)
    kept = default_mask.reshape(-1) != 0
    # Entries pruned already are never chosen again.
    flat = T.where(kept, flat, T.full_like(flat, float("-inf") if largest_pruned else float("inf")))
    idx = _topk(flat, k, largest=largest_pruned).indices
    return mask.reshape(-1).index_fill(0, idx, 0).reshape(tuple(mask.shape))


class _Unstructured(BasePruningMethod):
    """Prunes `amount` of the kept entries: those of lowest score (_scores), or of highest."""
    PRUNING_TYPE = "unstructured"
    _largest_pruned = False

    def __init__(self, amount):
        _validate_amount(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        k = _count(self.amount, _kept(default_mask))
        return _zero_lowest(self._scores(t), default_mask, k, largest_pruned=self._largest_pruned)


class RandomUnstructured(_Unstructured):
    """Prunes `amount` of the kept entries, chosen at random (gt.manual_seed)."""
    _largest_pruned = True

    def _scores(self, t):
        return T.rand_like(t.float())

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Prunes the `amount` of the kept entries with the smallest absolute value."""

    def _scores(self, t):
        return T.abs(t)

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _channel_mask(t, dim, keep):
    """A mask of t's shape: 1 on the channels along `dim` where the bool vector `keep` is true."""
    shape = [1] * len(t.shape)
    shape[dim] = t.shape[dim]
    return T.broadcast_to(keep.to(t.dtype).reshape(tuple(shape)), tuple(t.shape))


def _kept_channels(default_mask, dim):
    """Bool vector: the channels along `dim` where default_mask keeps some entry."""
    axes = tuple(d for d in range(len(default_mask.shape)) if d != dim)
    summed = T.sum(T.abs(default_mask.float()), axes) if axes else T.abs(default_mask.float())
    return summed != 0


class _Structured(BasePruningMethod):
    PRUNING_TYPE = "structured"

    def _prune_channels(self, t, default_mask, scores, largest_pruned):
        if len(t.shape) <= 1:
            raise ValueError(f"Structured pruning can only be applied to multidimensional tensors. Found tensor of "
                             f"shape {tuple(t.shape)} with {len(t.shape)} dims")
        dim = self.dim if self.dim >= 0 else len(t.shape) + self.dim
        if not 0 <= dim < len(t.shape):
            raise IndexError(f"dim {self.dim} is out of range for a tensor of {len(t.shape)} dimensions")
        kept = _kept_channels(default_mask, dim)
        nkept = _kept(kept)
        k = _count(self.amount, nkept)
        if k == 0:
            return default_mask.clone()
        scores = scores if scores.dtype.is_floating_point else scores.float()  # (float64 ranked in float64)
        scores = T.where(kept, scores, T.full_like(scores, float("-inf") if largest_pruned else float("inf")))
        idx = _topk(scores, k, largest=largest_pruned).indices
        keep = kept.float().index_fill(0, idx, 0) != 0
        return _channel_mask(t, dim, keep) * default_mask


class RandomStructured(_Structured):
    """Prunes `amount` of the kept channels along `dim`, chosen at random (gt.manual_seed)."""

    def __init__(self, amount, dim=-1):
        _validate_amount(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t, default_mask):
        dim = self.dim if self.dim >= 0 else len(t.shape) + self.dim
        return self._prune_channels(t, default_mask, T.rand(t.shape[dim]), largest_pruned=True)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_Structured):
    """Prunes `amount` of the kept channels along `dim` with the smallest L`n` norm (n: a number,
    float("inf"), or "fro")."""

    def __init__(self, amount, n, dim=-1):
        _validate_amount(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t, default_mask):
        dim = self.dim if self.dim >= 0 else len(t.shape) + self.dim
        axes = tuple(d for d in range(len(t.shape)) if d != dim)
        a = T.abs(t if t.dtype.is_floating_point else t.float())  # (float64 ranked in float64)
        n = 2 if self.n == "fro" else self.n
        if not axes:
            norms = a
        elif n == float("inf"):
            norms = T.amax(a, axes)
        elif n == float("-inf"):  # (PyTorch's norm of order -inf: the smallest |w|)
            norms = T.amin(a, axes)
        elif n == 0:
            norms = T.sum((a != 0).float(), axes)
        else:
            norms = T.pow(T.sum(T.pow(a, float(n)), axes), 1.0 / float(n))
        return self._prune_channels(t, default_mask, norms, largest_pruned=False)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes with a given mask (combined with what earlier pruning kept)."""
    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        if tuple(self.mask.shape) != tuple(default_mask.shape):
            raise ValueError(f"the mask's shape {tuple(self.mask.shape)} is not the tensor's {tuple(default_mask.shape)}")
        return default_mask * self.mask.to(default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def _pre_hooks(module):
    return module._call_state()["forward_pre"]


def identity(module, name):
    """Registers the pruning machinery on module.<name> with a mask of ones; returns module."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    """Prunes `amount` of module.<name>'s entries at random; returns module."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    """Prunes the `amount` of module.<name>'s entries with the smallest |value| (or smallest
    importance_scores, a tensor of its shape); returns module."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    """Prunes `amount` of module.<name>'s channels along `dim` at random; returns module."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    """Prunes the `amount` of module.<name>'s channels along `dim` with the smallest L`n` norm;
    returns module."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    """Prunes module.<name> where `mask` (same shape) is 0; returns module."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prunes the tensors `parameters` (an iterable of (module, name)) together: e.g. with
    L1Unstructured and amount=0.2, the 20 % of all their kept entries with the smallest |value|.
    importance_scores: an optional dict {(module, name): tensor}."""
    parameters = list(parameters)
    if not parameters:
        raise ValueError("global_unstructured needs at least one (module, name) pair")
    importance_scores = importance_scores or {}
    scores = [importance_scores.get((m, n), getattr(m, n)).detach().reshape(-1) for m, n in parameters]
    masks = [getattr(m, n + "_mask", T.ones_like(getattr(m, n))).reshape(-1) for m, n in parameters]
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f'Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. Found method '
                        f'{pruning_method} of type {method.PRUNING_TYPE}')
    with no_grad():
        final = method.compute_mask(T.cat(scores), default_mask=T.cat(masks))
    start = 0
    for (m, n), s in zip(parameters, scores):
        size = s.shape[0]
        custom_from_mask(m, n, mask=final[start:start + size].reshape(tuple(getattr(m, n).shape)))
        start += size


def remove(module, name):
    """Makes the pruning of module.<name> permanent (see BasePruningMethod.remove); returns
    module. ValueError if module.<name> is not pruned."""
    for key, hook in list(_pre_hooks(module).items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del _pre_hooks(module)[key]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning can be removed")


def is_pruned(module):
    """True if module or one of its submodules has a pruned tensor."""
    for m in module.modules():
        for hook in m.__dict__.get("_hooks", {}).get("forward_pre", {}).values():
            if isinstance(hook, BasePruningMethod):
                return True
    return False
