"""gt.utils.checkpoint: activation checkpointing's API (torch.utils.checkpoint), running the
function as it is. GT keeps the forward pass's values for the backward pass as usual, so this
saves no memory; it lets scripts that checkpoint their blocks run unchanged."""


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check=None, debug=None,
               preserve_rng_state=True, **kwargs):
    """function(*args, **kwargs), with its gradients as without checkpointing."""
    return function(*args, **kwargs)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """The modules or functions of `functions` (a list or nn.Sequential) applied in turn."""
    for f in (functions.children() if hasattr(functions, "children") else functions):
        input = f(input)
    return input


class CheckpointError(RuntimeError):
    """torch.utils.checkpoint.CheckpointError (raised by PyTorch's non-reentrant checks; GT's
    checkpoint runs the function as it is and raises none)."""


class CheckpointPolicy:
    """torch.utils.checkpoint.CheckpointPolicy's names for selective checkpointing's policy
    functions (GT saves every value anyway: see the module's docstring)."""
    MUST_SAVE, PREFER_SAVE, MUST_RECOMPUTE, PREFER_RECOMPUTE = 0, 1, 2, 3


def noop_context_fn():
    """(nullcontext(), nullcontext()): checkpoint's default context_fn."""
    import contextlib
    return contextlib.nullcontext(), contextlib.nullcontext()


def create_selective_checkpoint_contexts(policy_fn_or_list, allow_cache_entry_mutation=False):
    """The context_fn of selective activation checkpointing: GT keeps every value for the
    backward pass, so the contexts do nothing (the same results; no memory saved)."""
    return noop_context_fn()


def set_checkpoint_early_stop(enable):
    """A context manager (nothing to stop early: GT does not recompute)."""
    import contextlib
    return contextlib.nullcontext()


def detach_variable(inputs):
    """The tensors of the tuple `inputs` detached, each requiring grad as it did, as
    torch.utils.checkpoint.detach_variable. Raises RuntimeError for something else than a tuple."""
    from .. import _tensor
    if not isinstance(inputs, tuple):
        raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")
    out = []
    for x in inputs:
        if isinstance(x, _tensor.Tensor):
            d = x.detach()
            d.requires_grad = x.requires_grad
            out.append(d)
        else:
            out.append(x)
    return tuple(out)
