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

from . import _runtime
from . import _tensor as T

current = _runtime.current_signal


def _snapshot():
    """The active signals (a tuple), for `_restored`."""
    return tuple(_runtime._signals)


@contextlib.contextmanager
def _restored(stack):
    """Runs a block under the signals of an earlier `_snapshot()` (gt.nn.init fills a
    parameter under the signals it was made under, so it keeps its layout)."""
    saved = _runtime._signals
    _runtime._signals = list(stack)
    _runtime.apply_signal()
    try:
        yield
    finally:
        _runtime._signals = saved
        _runtime.apply_signal()


def enter(name, backward=None):
    """Makes `name` the active signal until the matching `exit` (see `context`).

    `backward` names the config entry used for the gradients of the ops issued meanwhile
    (default: the `backward:` key of `name`'s entry, else `name`'s entry itself). Raises
    ValueError for a name that is not a non-empty string."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"a signal name must be a non-empty string, got {name!r}")
    if backward is not None and (not isinstance(backward, str) or not backward):
        raise ValueError(f"backward= must be a non-empty signal name or None, got {backward!r}")
    _runtime._signals.append((name, backward))
    _runtime.apply_signal()


def exit(name=None):
    """Ends the innermost signal (`name`, if given, must be it). Raises RuntimeError when no
    signal is active or `name` is not the innermost one."""
    stack = _runtime._signals
    if not stack:
        raise RuntimeError("gt.signal.exit: no signal is active")
    if name is not None and stack[-1][0] != name:
        raise RuntimeError(f"gt.signal.exit({name!r}): the innermost active signal is {stack[-1][0]!r}")
    stack.pop()
    _runtime.apply_signal()


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
    flow through unchanged. Without a config entry for `name` it is a plain copy. Raises
    TypeError if x is not a gt.Tensor."""
    if not isinstance(x, T.Tensor):
        raise TypeError(f"gt.signal.tensor expects a gt.Tensor, got {type(x).__name__}")
    with context(name):
        return T._op("shard", x, shape=x.shape)
