"""torch.backends.cuda's switches, kept and read back (see gt.backends)."""
import types

matmul = types.SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                               allow_bf16_reduced_precision_reduction=True)


def is_built():
    """False: GT's Python package is not a CUDA build of PyTorch (its GPU workers are separate processes)."""
    return False


def flash_sdp_enabled():
    return False


def enable_flash_sdp(enabled):
    pass


def enable_mem_efficient_sdp(enabled):
    pass


def enable_math_sdp(enabled):
    pass
