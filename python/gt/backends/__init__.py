"""gt.backends: the switches PyTorch scripts set on torch.backends, accepted so that those lines
run. None of them changes what GT computes: GT's kernels do not depend on cuDNN's algorithm
search (`cudnn.benchmark`), give the same result on every run (`cudnn.deterministic`), and use
no TF32 (`allow_tf32`); the values set are kept and read back."""
import types

cudnn = types.SimpleNamespace(enabled=True, benchmark=False, deterministic=False, allow_tf32=True,
                              is_available=lambda: False, version=lambda: None)
cuda = types.SimpleNamespace(matmul=types.SimpleNamespace(allow_tf32=False, allow_fp16_reduced_precision_reduction=True,
                                                          allow_bf16_reduced_precision_reduction=True),
                             is_built=lambda: False, flash_sdp_enabled=lambda: False,
                             enable_flash_sdp=lambda enabled: None, enable_mem_efficient_sdp=lambda enabled: None,
                             enable_math_sdp=lambda enabled: None)
mps = types.SimpleNamespace(is_available=lambda: False, is_built=lambda: False)
