"""scaled_dot_product_attention with grouped-query attention (enable_gqa) against NumPy, and
torch.nn.attention's sdpa_kernel."""
import numpy as np
import pytest

import gt
import gt.nn.functional as F
from gt.nn.attention import SDPBackend, sdpa_kernel


def attention_np(q, k, v, causal):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], dtype=bool)), s, -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    return (w / w.sum(-1, keepdims=True)) @ v


def test_grouped_query_attention_repeats_each_key_value_head():
    rng = np.random.default_rng(0)
    q = rng.standard_normal((2, 6, 5, 4))
    k, v = rng.standard_normal((2, 2, 5, 4)), rng.standard_normal((2, 2, 5, 4))
    out = F.scaled_dot_product_attention(gt.tensor(q), gt.tensor(k), gt.tensor(v), is_causal=True, enable_gqa=True)
    want = attention_np(q, np.repeat(k, 3, axis=1), np.repeat(v, 3, axis=1), True)  # heads 0-2 use kv head 0
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-10)
    # gradients reach the shared heads (summed over the query heads they serve)
    kk = gt.tensor(k, requires_grad=True)
    F.scaled_dot_product_attention(gt.tensor(q), kk, gt.tensor(v), enable_gqa=True).sum().backward()
    assert kk.grad.shape == (2, 2, 5, 4)
    with pytest.raises(RuntimeError, match="multiple of the key/value heads"):
        F.scaled_dot_product_attention(gt.tensor(q), gt.tensor(rng.standard_normal((2, 4, 5, 4))),
                                       gt.tensor(rng.standard_normal((2, 4, 5, 4))), enable_gqa=True)


def test_sdpa_kernel_records_the_allowed_backends():
    q = gt.randn(1, 2, 3, 4)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.MATH]):
        assert sdpa_kernel.current() == (SDPBackend.FLASH_ATTENTION, SDPBackend.MATH)
        out = F.scaled_dot_product_attention(q, q, q, is_causal=True)
    assert out.shape == (1, 2, 3, 4)
    assert SDPBackend.MATH in sdpa_kernel.current()
    with pytest.raises(ValueError, match="non-empty list"):
        with sdpa_kernel([]):
            pass


def test_backend_switches_are_kept_and_read_back():
    cuda = gt.backends.cuda
    assert cuda.flash_sdp_enabled() and cuda.math_sdp_enabled()
    with cuda.sdp_kernel(enable_flash=False, enable_mem_efficient=False):
        assert not cuda.flash_sdp_enabled() and not cuda.mem_efficient_sdp_enabled() and cuda.math_sdp_enabled()
    assert cuda.flash_sdp_enabled()
    cuda.enable_flash_sdp(False)
    try:
        assert not cuda.flash_sdp_enabled()
    finally:
        cuda.enable_flash_sdp(True)
