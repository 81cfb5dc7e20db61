"""torch.backends.cudnn's switches, kept and read back; GT uses no cuDNN (see gt.backends)."""
enabled = True
benchmark = False
deterministic = False
allow_tf32 = True


def is_available():
    """False: GT's kernels are its own (and cuBLAS's), not cuDNN's."""
    return False


def version():
    """None, as PyTorch without cuDNN."""
    return None


def flags(enabled=False, benchmark=False, deterministic=False, allow_tf32=True, *args, **kwargs):
    """torch.backends.cudnn.flags: a context manager that sets the switches above for the block
    and restores them after (they change nothing in GT)."""
    import contextlib
    import sys
    module = sys.modules[__name__]

    @contextlib.contextmanager
    def block():
        saved = (module.enabled, module.benchmark, module.deterministic, module.allow_tf32)
        module.enabled, module.benchmark, module.deterministic, module.allow_tf32 = \
            enabled, benchmark, deterministic, allow_tf32
        try:
            yield
        finally:
            module.enabled, module.benchmark, module.deterministic, module.allow_tf32 = saved
    return block()
