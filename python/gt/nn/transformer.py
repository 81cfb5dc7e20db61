"""Attention and Transformer layers with torch.nn's names, parameters and arguments
(Vaswani et al. 2017, "Attention is all you need"): MultiheadAttention,
TransformerEncoderLayer / TransformerEncoder, TransformerDecoderLayer / TransformerDecoder and
Transformer. Built from gt.nn's layers, so a state dict of PyTorch's modules loads into them.

Shapes use PyTorch's letters: L target (query) length, S source (key) length, N batch, E
embedding. Inputs are (L, N, E) unless batch_first=True ((N, L, E)); MultiheadAttention also
takes unbatched (L, E) inputs.
"""
import copy
import warnings
import math

from .. import _functions as T
from .. import dtypes as _dt
from .. import overrides as _overrides
from . import functional as F
from . import init
from .modules import Module, ModuleList, Parameter, Linear, LayerNorm, Dropout


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear under the name PyTorch gives MultiheadAttention's output projection (its repr
    prints it; torch.nn.modules.linear.NonDynamicallyQuantizableLinear)."""


class MultiheadAttention(Module):
    """softmax(q k^T / sqrt(E / num_heads) + mask) v per head, heads joined and projected.

    Parameters as PyTorch's: in_proj_weight (3E, E) (xavier_uniform_), in_proj_bias (3E,)
    (zeros), out_proj (a Linear E -> E, bias zeros). forward(query, key, value,
    key_padding_mask=None, need_weights=True, attn_mask=None, average_attn_weights=True,
    is_causal=False) returns (output, weights): weights (N, L, S) averaged over heads, or
    (N, num_heads, L, S), or None without need_weights. A bool mask is True where attention is
    NOT allowed (attn_mask (L, S) or (N * num_heads, L, S); key_padding_mask (N, S)); a float
    mask is added to the scores. With kdim/vdim other than embed_dim the projections are
    q_proj_weight (E, E), k_proj_weight (E, kdim), v_proj_weight (E, vdim) instead of
    in_proj_weight; add_bias_kv appends the learned bias_k / bias_v (1, 1, E) (xavier_normal_)
    to the keys and values, add_zero_attn a zero key and value per head after the projections
    (both: one more key position, the masks padded with a column that allows it)."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False,
                 kdim=None, vdim=None, batch_first=False, device=None, dtype=None):
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0 or embed_dim % num_heads:
            raise ValueError(f"embed_dim ({embed_dim}) must be divisible by num_heads ({num_heads})")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.kdim = embed_dim if kdim is None else kdim
        self.vdim = embed_dim if vdim is None else vdim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(T.zeros(3 * embed_dim, embed_dim, dtype=dtype))
            self.q_proj_weight = self.k_proj_weight = self.v_proj_weight = None
        else:
            self.q_proj_weight = Parameter(T.zeros(embed_dim, embed_dim, dtype=dtype))
            self.k_proj_weight = Parameter(T.zeros(embed_dim, self.kdim, dtype=dtype))
            self.v_proj_weight = Parameter(T.zeros(embed_dim, self.vdim, dtype=dtype))
            self.in_proj_weight = None
        self.in_proj_bias = Parameter(T.zeros(3 * embed_dim, dtype=dtype)) if bias else None
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias, device=device, dtype=dtype)
        if add_bias_kv:
            self.bias_k = Parameter(T.zeros(1, 1, embed_dim, dtype=dtype))
            self.bias_v = Parameter(T.zeros(1, 1, embed_dim, dtype=dtype))
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        for w in (self.in_proj_weight, self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
            if w is not None:
                init.xavier_uniform_(w)
        if bias:
            init.zeros_(self.out_proj.bias)
        if add_bias_kv:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    @_overrides.keeps_subclass
    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        batched = query.ndim == 3
        if batched and self.batch_first:
            query, key, value = (T.transpose(t, 0, 1) for t in (query, key, value))
        out, weights = F.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight, self.in_proj_bias, self.bias_k,
            self.bias_v, self.add_zero_attn, self.dropout, self.out_proj.weight, self.out_proj.bias,
            training=self.training, key_padding_mask=key_padding_mask, need_weights=need_weights,
            attn_mask=attn_mask, use_separate_proj_weight=not self._qkv_same_embed_dim,
            q_proj_weight=self.q_proj_weight, k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight,
            average_attn_weights=average_attn_weights, is_causal=is_causal)
        if batched and self.batch_first:
            out = T.transpose(out, 0, 1)
        return out, weights


def _attend(attention, x, memory, mask, padding, is_causal):
    """The output of `attention` (a MultiheadAttention) of queries x over keys and values memory."""
    return attention(x, memory, memory, attn_mask=mask, key_padding_mask=padding, need_weights=False,
                     is_causal=is_causal)[0]


def _activation(activation):
    if callable(activation):
        return activation
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block (linear1, activation, dropout, linear2), each
    with a residual and a LayerNorm: after (norm_first=False, Vaswani et al. 2017) or before
    (norm_first=True). forward(src, src_mask=None, src_key_padding_mask=None, is_causal=False)."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias=bias, batch_first=batch_first, dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1, self.dropout2 = Dropout(dropout), Dropout(dropout)
        self.activation = _activation(activation)
        # (PyTorch's attribute: 1 for relu, 2 for gelu, else 0)
        self.activation_relu_or_gelu = {F.relu: 1, F.gelu: 2}.get(self.activation, 0)

    def _sa(self, x, mask, padding, is_causal):
        return self.dropout1(_attend(self.self_attn, x, x, mask, padding, is_causal))

    def _ff(self, x):
        return self.dropout2(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._sa(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff(self.norm2(x))
        x = self.norm1(x + self._sa(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff(x))


class TransformerDecoderLayer(Module):
    """Self-attention, attention over `memory` (the encoder's output), then a feed-forward
    block, each with a residual and a LayerNorm (after, or before with norm_first).
    forward(tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
    memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False)."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias=bias, batch_first=batch_first, dtype=dtype)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout, bias=bias, batch_first=batch_first,
                                                 dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype)
        self.dropout1, self.dropout2, self.dropout3 = Dropout(dropout), Dropout(dropout), Dropout(dropout)
        self.activation = _activation(activation)

    def _sa(self, x, mask, padding, is_causal):
        return self.dropout1(_attend(self.self_attn, x, x, mask, padding, is_causal))

    def _mha(self, x, memory, mask, padding, is_causal):
        return self.dropout2(_attend(self.multihead_attn, x, memory, mask, padding, is_causal))

    def _ff(self, x):
        return self.dropout3(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        x = tgt
        if self.norm_first:
            x = x + self._sa(self.norm1(x), tgt_mask, tgt_key_padding_mask, tgt_is_causal)
            x = x + self._mha(self.norm2(x), memory, memory_mask, memory_key_padding_mask, memory_is_causal)
            return x + self._ff(self.norm3(x))
        x = self.norm1(x + self._sa(x, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self.norm2(x + self._mha(x, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
        return self.norm3(x + self._ff(x))


def _why_not_nested(layer):
    """Why PyTorch's TransformerEncoder would not use nested tensors with this layer ("" if it would)."""
    if not isinstance(layer, TransformerEncoderLayer):
        return f"encoder_layer was not {TransformerEncoderLayer.__name__}"
    attn = layer.self_attn
    for bad, why in ((layer.norm_first, "norm_first was True"),
                     (not attn.batch_first, "self_attn.batch_first was not True(use batch_first for better "
                                            "inference performance)"),
                     (not attn._qkv_same_embed_dim, "self_attn._qkv_same_embed_dim was not True"),
                     (attn.in_proj_bias is None, "self_attn was passed bias=False"),
                     (not layer.activation_relu_or_gelu, "activation_relu_or_gelu was not True"),
                     (layer.norm1.eps != layer.norm2.eps, "norm1.eps was not equal to encoder_layer.norm2.eps"),
                     (attn.num_heads % 2 == 1, "self_attn.num_heads is odd")):
        if bad:
            return "encoder_layer." + why
    return ""


class TransformerEncoder(Module):
    """`num_layers` copies of `encoder_layer` (deep copies: their own parameters) applied in
    turn, then `norm` if given."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True, mask_check=True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm
        # GT has no nested tensors; PyTorch's warning (and use_nested_tensor) where its fast path
        # would not take them either, so a script prints what it prints under PyTorch
        why = _why_not_nested(encoder_layer)
        self.enable_nested_tensor = enable_nested_tensor
        self.use_nested_tensor = enable_nested_tensor and not why
        if enable_nested_tensor and why:
            warnings.warn(f"enable_nested_tensor is True, but self.use_nested_tensor is False because {why}",
                          stacklevel=2)

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=bool(is_causal))
        return self.norm(x) if self.norm is not None else x


class TransformerDecoder(Module):
    """`num_layers` copies of `decoder_layer` applied in turn, then `norm` if given."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(decoder_layer) for _ in range(num_layers)])
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        x = tgt
        for layer in self.layers:
            x = layer(x, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask,
                      bool(tgt_is_causal), memory_is_causal)
        return self.norm(x) if self.norm is not None else x


class Transformer(Module):
    """An encoder of num_encoder_layers TransformerEncoderLayers and a decoder of
    num_decoder_layers TransformerDecoderLayers, each stack ending in a LayerNorm, as
    torch.nn.Transformer. forward(src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
    src_key_padding_mask=None, tgt_key_padding_mask=None, memory_key_padding_mask=None)."""

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6, dim_feedforward=2048,
                 dropout=0.1, activation="relu", custom_encoder=None, custom_decoder=None, layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, dtype=None):
        super().__init__()
        kw = dict(dim_feedforward=dim_feedforward, dropout=dropout, activation=activation,
                  layer_norm_eps=layer_norm_eps, batch_first=batch_first, norm_first=norm_first, bias=bias, dtype=dtype)
        self.encoder = custom_encoder or TransformerEncoder(
            TransformerEncoderLayer(d_model, nhead, **kw), num_encoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
        self.decoder = custom_decoder or TransformerDecoder(
            TransformerDecoderLayer(d_model, nhead, **kw), num_decoder_layers,
            LayerNorm(d_model, eps=layer_norm_eps, bias=bias, dtype=dtype))
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        for p in self.parameters():  # as PyTorch's _reset_parameters
            if p.ndim > 1:
                init.xavier_uniform_(p)

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None, src_key_padding_mask=None,
                tgt_key_padding_mask=None, memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz, device=None, dtype=None):
        """(sz, sz) float mask: 0 on and below the diagonal, -inf above (a causal mask)."""
        import numpy as np
        mask = np.triu(np.full((sz, sz), -np.inf, dtype=np.float32), 1)
        return T.from_numpy(mask.astype(_dt.numpy_dtype(_dt.resolve(dtype or _dt.default_float()))))
