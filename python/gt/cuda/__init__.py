"""gt.cuda: what PyTorch scripts ask torch.cuda, answered for the session's workers.

GT runs every tensor on its session's workers; these say whether they are GPUs (see gt.device):

    device = "cuda" if gt.cuda.is_available() else "cpu"
"""
from .. import _device


def is_available():
    """Whether the session's workers are GPUs (before an auto-started session opens: whether
    GT_DEVICE asks for CUDA workers; with GT_SERVER, the dispatcher is asked once)."""
    return _device.session_device_type() == "cuda"


def device_count():
    """How many of the session's workers are GPUs."""
    return _device.cuda_worker_count()


def current_device():
    """0: a session's GPUs are its workers', not this process's to choose among."""
    return 0


def get_device_name(device=None):
    """'GT worker (cuda)': the GPUs are the workers', whatever their model."""
    return "GT worker (cuda)"


def synchronize(device=None):
    """Waits until every op issued so far has run (gt.synchronize)."""
    from .. import synchronize as _sync
    _sync()


def manual_seed(seed):
    """gt.manual_seed: one seed stream serves every worker, GPU or not."""
    from .._tensor import manual_seed as _seed
    _seed(seed)


manual_seed_all = manual_seed


def seed():
    """gt.seed: a fresh random seed for the session's one stream (shared by every device)."""
    from .. import _compat
    return _compat.seed()


seed_all = seed


def initial_seed():
    """gt.initial_seed (the session's one stream)."""
    from .. import _compat
    return _compat.initial_seed()


def get_rng_state(device="cuda"):
    """The session's generator state (gt.get_rng_state): GT has one stream of draws for every
    device (see manual_seed)."""
    from .. import _tensor
    return _tensor.get_rng_state()


def set_rng_state(new_state, device="cuda"):
    """Restores the session's generator (gt.set_rng_state; one stream for every device)."""
    from .. import _tensor
    _tensor.set_rng_state(new_state)


def get_rng_state_all():
    """[get_rng_state()] per GPU (device_count(): none on CPU workers)."""
    return [get_rng_state() for _ in range(device_count())]


def set_rng_state_all(new_states):
    """set_rng_state of the last state given (every GPU shares the session's one stream)."""
    for state in new_states:
        set_rng_state(state)


def is_bf16_supported():
    """True: every GT worker computes bfloat16 (in float32, rounded once per op)."""
    return True


def empty_cache():
    """Nothing to do on the client: workers keep their own caches."""


def memory_allocated(device=None):
    """Bytes the session's tensors hold on its GPU workers now (0 when they are not GPUs, as
    PyTorch without CUDA): gt.debug.stats()'s live_bytes, which waits for the work issued."""
    return int(_stats("live_bytes"))


def max_memory_allocated(device=None):
    """The most bytes the session's tensors held on its GPU workers at once since the session
    opened (gt.debug.stats()'s peak_bytes; 0 when the workers are not GPUs)."""
    return int(_stats("peak_bytes"))


memory_reserved, max_memory_reserved = memory_allocated, max_memory_allocated


def reset_peak_memory_stats(device=None):
    """Accepted; the workers' peak counts from the session's start and is not reset."""


def _stats(key):
    if not is_available():
        return 0
    from .. import debug
    return debug.stats().get(key, 0)


class Event:
    """torch.cuda.Event for timing: record() waits until every op issued so far has run (the
    workers' queues drain) and notes the host clock; elapsed_time(end) is the milliseconds
    between two records. GT's workers run the session's ops in order, so this times the ops
    issued between the records, host round trips included (a CUDA event's time is the GPU's)."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        self.enable_timing, self._time = enable_timing, None

    def record(self, stream=None):
        import time
        synchronize()
        self._time = time.perf_counter()

    def synchronize(self):
        pass  # (record() waited already)

    def query(self):
        return True

    def wait(self, stream=None):
        pass

    def elapsed_time(self, end_event):
        """Milliseconds from this event's record() to end_event's. Raises RuntimeError if
        either was not recorded or timing is off."""
        if not (self.enable_timing and end_event.enable_timing):
            raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
        if self._time is None or end_event._time is None:
            raise RuntimeError("Both events must be recorded before calculating elapsed time.")
        return (end_event._time - self._time) * 1e3


class Stream:
    """torch.cuda.Stream: accepted (with torch.cuda.stream(s) as a context); GT's workers order a
    session's ops themselves, so a stream changes nothing and its waits are no-ops."""

    def __init__(self, device=None, priority=0, **kwargs):
        self.device, self.priority = device, priority

    def wait_stream(self, stream):
        pass

    def wait_event(self, event):
        pass

    def record_event(self, event=None):
        event = event or Event()
        event.record(self)
        return event

    def synchronize(self):
        synchronize()

    def query(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class StreamContext:
    """torch.cuda.StreamContext: `with torch.cuda.stream(s):`, which changes nothing (see Stream)."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        return self.stream

    def __exit__(self, *exc):
        return False


def stream(stream):
    return StreamContext(stream)


_DEFAULT_STREAM = Stream()


def current_stream(device=None):
    return _DEFAULT_STREAM


def default_stream(device=None):
    return _DEFAULT_STREAM


class CUDAGraph:
    """torch.cuda.CUDAGraph: not available to scripts (GT's CUDA workers capture and replay hot
    regions as CUDA graphs themselves: docs/gpu.md). Raises NotImplementedError when made."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError("torch.cuda.CUDAGraph: GT's CUDA workers capture hot regions as CUDA graphs "
                                  "themselves (docs/gpu.md); scripts cannot capture their own")


def graph(*args, **kwargs):
    """torch.cuda.graph: see CUDAGraph (NotImplementedError)."""
    CUDAGraph()


# torch.cuda.FloatTensor, ...: the legacy types of tensors on GPU workers (`Tensor =
# torch.cuda.FloatTensor if cuda else torch.FloatTensor`); made here, a tensor lives on the
# session's workers as any other (see gt.device).
from .. import _tensor as _t  # noqa: E402
FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, LongTensor, IntTensor, BoolTensor, ShortTensor, CharTensor, \
    ByteTensor = (_t._typed_constructor(name, d, "cuda.") for name, d in (
        ("FloatTensor", _t._dt.float32), ("DoubleTensor", _t._dt.float64), ("HalfTensor", _t._dt.float16),
        ("BFloat16Tensor", _t._dt.bfloat16), ("LongTensor", _t._dt.int64), ("IntTensor", _t._dt.int32),
        ("BoolTensor", _t._dt.bool), ("ShortTensor", _t._dt.int16), ("CharTensor", _t._dt.int8),
        ("ByteTensor", _t._dt.uint8)))
from . import amp, random  # noqa: E402  (torch.cuda.amp, torch.cuda.random)


__all__ = ["amp", "random", "is_available", "device_count", "current_device", "get_device_name", "synchronize", "manual_seed",
           "manual_seed_all", "is_bf16_supported", "empty_cache", "memory_allocated", "max_memory_allocated",
           "memory_reserved", "max_memory_reserved", "reset_peak_memory_stats"]
