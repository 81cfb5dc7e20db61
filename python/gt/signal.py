"""Named signals: the sharding config (YAML, see `gt.load_config`) maps a signal's name to a
layout, so the same script runs on one worker or many without code changes.

    with gt.signal.context('data'):            # ops issued inside carry the signal 'data'
        x = gt.tensor(batch)                   # created tensors take the signal's layout
        y = model(x)                           # compute runs on the signal's workers
    w = gt.signal.tensor(w, name='params')     # reshard one tensor (a copy with the layout)

    with gt.signal.context('stage1', backward='stage1_bwd'):
        ...                                    # gradients of these ops use 'stage1_bwd'

Signals nest, and the innermost active signal that the loaded config names applies; signals
the config does not name are passed over. So a script can name coarse and fine signals at
once and each config picks its granularity:

    with gt.signal.context('params'):              # a data-parallel config names only 'params'
        with gt.signal.context('mlp_up'):          # a tensor-parallel one also names 'mlp_up'
            up = nn.Linear(128, 512)

With no active signal the config names (or no config at all) nothing changes: every op
runs, unsharded, on the session's worker.
"""
import contextlib

_stack = []  # (name, backward) of the active signals, innermost last
_configured = None  # the signal names the session's config defines (None: no config loaded)


def current():
    """The signal that applies now, as (name, backward name or None): the innermost active
    signal the loaded config names (without a config: the innermost active signal), or
    (None, None)."""
    for name, backward in reversed(_stack):
        if _configured is None or name in _configured:
            return name, backward
    return None, None


def _snapshot():
    """The active signals (a tuple), for `_restored`."""
    return tuple(_stack)


@contextlib.contextmanager
def _restored(stack):
    """Runs a block under the signals of an earlier `_snapshot()` (gt.nn.init fills a
    parameter under the signals it was made under, so it keeps its layout)."""
    global _stack
    saved = _stack
    _stack = list(stack)
    _apply()
    try:
        yield
    finally:
        _stack = saved
        _apply()


def _set_configured(names):
    """Called by gt.load_config with the names the new config defines."""
    global _configured
    _configured = frozenset(names)
    _apply()


def _apply():
    from . import _runtime
    if _runtime._client is None:
        return  # the session applies the active signal when it opens
    name, _ = current()
    _runtime._client.set_signal(name or "", False)


def enter(name, backward=None):
    """Makes `name` the active signal until the matching `exit` (see `context`).

    `backward` names the config entry used for the gradients of the ops issued meanwhile
    (default: the `backward:` key of `name`'s entry, else `name`'s entry itself)."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"a signal name must be a non-empty string, got {name!r}")
    if backward is not None and (not isinstance(backward, str) or not backward):
        raise ValueError(f"backward= must be a non-empty signal name or None, got {backward!r}")
    _stack.append((name, backward))
    _apply()


def exit(name=None):
    """Ends the innermost signal (`name`, if given, must be it). Raises RuntimeError when no
    signal is active or `name` is not the innermost one."""
    if not _stack:
        raise RuntimeError("gt.signal.exit: no signal is active")
    if name is not None and _stack[-1][0] != name:
        raise RuntimeError(f"gt.signal.exit({name!r}): the innermost active signal is {_stack[-1][0]!r}")
    _stack.pop()
    _apply()


@contextlib.contextmanager
def context(name, backward=None):
    """Context manager: every op issued inside carries the signal `name` (see `enter`)."""
    enter(name, backward)
    try:
        yield
    finally:
        exit(name)


def tensor(x, name):
    """A copy of `x` resharded as signal `name`'s config entry says (`gt.shard`); gradients
    flow through unchanged. Without a config entry for `name` it is a plain copy."""
    from . import _tensor as T
    if not isinstance(x, T.Tensor):
        raise TypeError(f"gt.signal.tensor expects a gt.Tensor, got {type(x).__name__}")
    with context(name):
        return T._op("shard", x, shape=x.shape)


@contextlib.contextmanager
def _for_gradient(node_signal):
    """Inside autograd: the signal a node's gradient ops carry (its `backward=`, or its own
    signal marked as a gradient so the config's `backward:` entry applies)."""
    from . import _runtime
    client = _runtime.client()
    previous = client.signal()
    name, backward = node_signal
    if backward:
        client.set_signal(backward, False)
    else:
        client.set_signal(name or "", bool(name))
    try:
        yield
    finally:
        client.set_signal(*previous)
