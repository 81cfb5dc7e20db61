"""torch.nn.utils.clip_grad: the gradient clipping functions of gt.nn.utils."""
from . import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm  # noqa: F401

clip_grad_norm = clip_grad_norm_  # (PyTorch's deprecated name)
__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]
