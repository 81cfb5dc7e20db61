"""repr() of gt.nn modules: exactly PyTorch's strings (gt.float32 where PyTorch prints torch.float32)."""
import gt
import gt.nn as nn

LINEAR = "Linear(in_features=8, out_features=8, bias=True)"

# PyTorch's output for the same constructions (the first part printed by PyTorch itself).
CASES = [
    (lambda: nn.Linear(3, 4, bias=False), "Linear(in_features=3, out_features=4, bias=False)"),
    (lambda: nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False),
     "Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)"),
    (lambda: nn.BatchNorm2d(8),
     "BatchNorm2d(8, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"),
    (lambda: nn.BatchNorm2d(8, affine=False, momentum=None),
     "BatchNorm2d(8, eps=1e-05, momentum=None, affine=False, bias=False, track_running_stats=True)"),
    (lambda: nn.LayerNorm(5), "LayerNorm((5,), eps=1e-05, elementwise_affine=True, bias=True)"),
    (lambda: nn.LayerNorm((2, 5), elementwise_affine=False),
     "LayerNorm((2, 5), eps=1e-05, elementwise_affine=False, bias=False)"),
    (lambda: nn.GroupNorm(2, 4), "GroupNorm(2, 4, eps=1e-05, affine=True, bias=True)"),
    (lambda: nn.InstanceNorm2d(3),
     "InstanceNorm2d(3, eps=1e-05, momentum=0.1, affine=False, bias=False, track_running_stats=False)"),
    (lambda: nn.RMSNorm(4), "RMSNorm((4,), eps=None, elementwise_affine=True)"),
    (lambda: nn.LocalResponseNorm(2), "LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1.0)"),
    (lambda: nn.LeakyReLU(), "LeakyReLU(negative_slope=0.01)"),
    (lambda: nn.LeakyReLU(0.2, inplace=True), "LeakyReLU(negative_slope=0.2, inplace=True)"),
    (lambda: nn.ELU(), "ELU(alpha=1.0)"),
    (lambda: nn.CELU(), "CELU(alpha=1.0)"),
    (lambda: nn.SELU(), "SELU()"),
    (lambda: nn.GELU(), "GELU(approximate='none')"),
    (lambda: nn.GELU(approximate="tanh"), "GELU(approximate='tanh')"),
    (lambda: nn.Hardtanh(), "Hardtanh(min_val=-1.0, max_val=1.0)"),
    (lambda: nn.ReLU6(), "ReLU6()"),
    (lambda: nn.Hardswish(), "Hardswish()"),
    (lambda: nn.Mish(), "Mish()"),
    (lambda: nn.Threshold(0.1, 20), "Threshold(threshold=0.1, value=20)"),
    (lambda: nn.PReLU(), "PReLU(num_parameters=1)"),
    (lambda: nn.Softplus(), "Softplus(beta=1.0, threshold=20.0)"),
    (lambda: nn.Flatten(), "Flatten(start_dim=1, end_dim=-1)"),
    (lambda: nn.Flatten(0, 2), "Flatten(start_dim=0, end_dim=2)"),
    (lambda: nn.Unflatten(1, (2, 2)), "Unflatten(dim=1, unflattened_size=(2, 2))"),
    (lambda: nn.Embedding(10, 3, padding_idx=0), "Embedding(10, 3, padding_idx=0)"),
    (lambda: nn.Upsample(scale_factor=2), "Upsample(scale_factor=2.0, mode='nearest')"),
    (lambda: nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False),
     "Upsample(scale_factor=2.0, mode='bilinear')"),
    (lambda: nn.PixelShuffle(2), "PixelShuffle(upscale_factor=2)"),
    (lambda: nn.LSTMCell(3, 4), "LSTMCell(3, 4)"),
    (lambda: nn.GRUCell(3, 4), "GRUCell(3, 4)"),
    (lambda: nn.AvgPool1d(3), "AvgPool1d(kernel_size=(3,), stride=(3,), padding=(0,))"),
    (lambda: nn.ConstantPad1d(2, 3.5), "ConstantPad1d(padding=(2, 2), value=3.5)"),
    (lambda: nn.ReflectionPad2d(1), "ReflectionPad2d((1, 1, 1, 1))"),
    (lambda: nn.BCELoss(), "BCELoss()"),
    (lambda: nn.NLLLoss(), "NLLLoss()"),
    (lambda: nn.SmoothL1Loss(), "SmoothL1Loss()"),
    (lambda: nn.KLDivLoss(reduction="batchmean"), "KLDivLoss()"),
    (lambda: nn.ParameterList([nn.Parameter(gt.ones(2))]),
     "ParameterList(  (0): Parameter containing: [gt.float32 of size 2])"),
    (lambda: nn.MultiheadAttention(8, 2), f"MultiheadAttention(\n  (out_proj): NonDynamicallyQuantizable{LINEAR}\n)"),
    (lambda: nn.Sequential(nn.Linear(2, 2), nn.ReLU()),
     "Sequential(\n  (0): Linear(in_features=2, out_features=2, bias=True)\n  (1): ReLU()\n)"),
    (lambda: nn.TransformerEncoderLayer(8, 2, 16),
     "TransformerEncoderLayer(\n"
     f"  (self_attn): MultiheadAttention(\n    (out_proj): NonDynamicallyQuantizable{LINEAR}\n  )\n"
     "  (linear1): Linear(in_features=8, out_features=16, bias=True)\n"
     "  (dropout): Dropout(p=0.1, inplace=False)\n"
     "  (linear2): Linear(in_features=16, out_features=8, bias=True)\n"
     "  (norm1): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)\n"
     "  (norm2): LayerNorm((8,), eps=1e-05, elementwise_affine=True, bias=True)\n"
     "  (dropout1): Dropout(p=0.1, inplace=False)\n"
     "  (dropout2): Dropout(p=0.1, inplace=False)\n"
     ")"),
    # Further cases, following PyTorch's extra_repr rules.
    (lambda: nn.ELU(inplace=True), "ELU(alpha=1.0, inplace=True)"),
    (lambda: nn.SELU(inplace=True), "SELU(inplace=True)"),
    (lambda: nn.ReLU6(inplace=True), "ReLU6(inplace=True)"),
    (lambda: nn.Mish(inplace=True), "Mish(inplace=True)"),
    (lambda: nn.Hardswish(inplace=True), "Hardswish()"),
    (lambda: nn.Threshold(0.1, 20, inplace=True), "Threshold(threshold=0.1, value=20, inplace=True)"),
    (lambda: nn.Hardshrink(), "Hardshrink(0.5)"),
    (lambda: nn.Embedding(10, 3, padding_idx=-1), "Embedding(10, 3, padding_idx=9)"),
    (lambda: nn.Upsample(size=(4, 4)), "Upsample(size=(4, 4), mode='nearest')"),
    (lambda: nn.ConvTranspose2d(4, 2, 3, stride=2, output_padding=1),
     "ConvTranspose2d(4, 2, kernel_size=(3, 3), stride=(2, 2), output_padding=(1, 1))"),
    (lambda: nn.RNNCell(3, 4, bias=False, nonlinearity="relu"), "RNNCell(3, 4, bias=False, nonlinearity=relu)"),
    (lambda: nn.ZeroPad2d(1), "ZeroPad2d((1, 1, 1, 1))"),
    (lambda: nn.ConstantPad2d(1, 0.5), "ConstantPad2d(padding=(1, 1, 1, 1), value=0.5)"),
    (lambda: nn.L1Loss(reduction="sum"), "L1Loss()"),
    (lambda: nn.ParameterList([nn.Parameter(gt.ones(2, 3)), nn.Parameter(gt.ones(4))]),
     "ParameterList(\n    (0): Parameter containing: [gt.float32 of size 2x3]\n"
     "    (1): Parameter containing: [gt.float32 of size 4]\n)"),
    (lambda: nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2), nn.Linear(2, 2), nn.ReLU()]),
     "ModuleList(\n  (0-2): 3 x Linear(in_features=2, out_features=2, bias=True)\n  (3): ReLU()\n)"),
    (lambda: nn.ModuleList(), "ModuleList()"),
]


def test_module_reprs_are_pytorchs():
    wrong = [(expected, repr(make())) for make, expected in CASES]
    wrong = [(expected, got) for expected, got in wrong if expected != got]
    assert not wrong, "\n".join(f"expected {e!r}\n     got {g!r}" for e, g in wrong)


class _WithExtra(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU()

    def extra_repr(self):
        return "k=1"


def test_extra_repr_and_children_both_print():
    # PyTorch prints extra_repr's lines first, then the children.
    assert repr(_WithExtra()) == "_WithExtra(\n  k=1\n  (act): ReLU()\n)"
    p = nn.Parameter(gt.ones(2))
    assert repr(nn.ParameterDict({"a": p})) == f"ParameterDict(  (a): Parameter containing: [{p.type()} of size 2])"
