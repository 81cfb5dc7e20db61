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
