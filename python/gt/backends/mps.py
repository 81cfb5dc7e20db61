"""torch.backends.mps: GT has no Metal workers."""


def is_available():
    return False


def is_built():
    return False
