"""torch.nn.attention.flex_attention, as far as GT goes: the names exist, for libraries that
import them whether or not they use them (transformers' masking utilities; BlockMask in
isinstance checks and annotations). GT has no FlexAttention kernels: flex_attention,
create_block_mask and making a BlockMask raise NotImplementedError; use
scaled_dot_product_attention with a mask."""

_DEFAULT_SPARSE_BLOCK_SIZE = 128


def _not_provided(*args, **kwargs):
    raise NotImplementedError("FlexAttention is not provided by GT (docs/api.md); use "
                              "torch.nn.functional.scaled_dot_product_attention with an attn_mask")


class BlockMask:
    """FlexAttention's block-sparse mask: never made in GT (NotImplementedError)."""

    def __init__(self, *args, **kwargs):
        _not_provided()

    @classmethod
    def from_kv_blocks(cls, *args, **kwargs):
        _not_provided()


class AuxRequest:
    """flex_attention's request for auxiliary outputs (accepted; flex_attention raises)."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


flex_attention = create_block_mask = create_mask = and_masks = or_masks = noop_mask = _not_provided
