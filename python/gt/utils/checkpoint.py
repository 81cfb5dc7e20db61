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
