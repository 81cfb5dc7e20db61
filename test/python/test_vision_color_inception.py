"""Tests of the color/blur transforms and the Inception v3 / GoogLeNet models added to gt.vision.

Expected values come from NumPy formulas (torchvision's documented ones) or, where marked, are
numbers torchvision 0.29 (PyTorch 2.15, CPU) printed for the same inputs.
"""
import colorsys
import random

import numpy as np
import pytest

import gt
from gt.vision import models
from gt.vision import transforms as T
from gt.vision.transforms import functional as F

# A fixed float image (3, 2, 3) in [0, 1] and a uint8 image (3, 3, 4).
XF = ((np.arange(18).reshape(3, 2, 3) * 7 % 18) / 17.0).astype(np.float32)
XU = ((np.arange(36).reshape(3, 3, 4) * 37) % 256).astype(np.uint8)


def _gray(a):
    return 0.2989 * a[..., 0, :, :] + 0.587 * a[..., 1, :, :] + 0.114 * a[..., 2, :, :]


@pytest.mark.parametrize("factor", [0.0, 0.5, 1.0, 1.7])
def test_brightness_contrast_saturation_float(factor):
    x = gt.tensor(XF)
    a = XF.astype(np.float64)
    np.testing.assert_allclose(F.adjust_brightness(x, factor).numpy(), np.clip(a * factor, 0, 1), atol=1e-6)
    mean = _gray(a).mean()
    np.testing.assert_allclose(F.adjust_contrast(x, factor).numpy(),
                               np.clip(factor * a + (1 - factor) * mean, 0, 1), atol=1e-6)
    np.testing.assert_allclose(F.adjust_saturation(x, factor).numpy(),
                               np.clip(factor * a + (1 - factor) * _gray(a)[None], 0, 1), atol=1e-6)


def test_brightness_uint8_truncates():
    out = F.adjust_brightness(gt.tensor(XU), 1.3).numpy()
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out, np.clip(np.float32(1.3) * XU.astype(np.float32), 0, 255).astype(np.uint8))


def test_contrast_saturation_uint8_match_torchvision():
    # torchvision 0.29: F.adjust_contrast(XU, 0.5) and F.adjust_saturation(XU, 1.7)
    con = [[[55, 73, 92, 110], [129, 147, 166, 56], [75, 93, 112, 130]],
           [[149, 167, 58, 76], [95, 113, 132, 150], [169, 59, 78, 96]],
           [[115, 133, 152, 170], [61, 79, 98, 116], [135, 153, 172, 62]]]
    sat = [[[0, 0, 92, 129], [187, 224, 255, 0], [0, 95, 132, 190]],
           [[232, 255, 0, 14], [71, 108, 145, 235], [255, 0, 17, 74]],
           [[117, 154, 255, 255], [0, 0, 30, 120], [157, 255, 255, 0]]]
    np.testing.assert_array_equal(F.adjust_contrast(gt.tensor(XU), 0.5).numpy(), np.array(con, np.uint8))
    np.testing.assert_array_equal(F.adjust_saturation(gt.tensor(XU), 1.7).numpy(), np.array(sat, np.uint8))


@pytest.mark.parametrize("hue", [-0.5, -0.2, 0.0, 0.2, 0.5])
def test_adjust_hue_float_matches_colorsys(hue):
    out = F.adjust_hue(gt.tensor(XF), hue).numpy()
    exp = np.empty_like(XF)
    for i in range(XF.shape[1]):
        for j in range(XF.shape[2]):
            h, s, v = colorsys.rgb_to_hsv(*XF[:, i, j].astype(float))
            exp[:, i, j] = colorsys.hsv_to_rgb((h + hue) % 1.0, s, v)
    np.testing.assert_allclose(out, exp, atol=1e-5)


def test_adjust_hue_matches_torchvision():
    # torchvision 0.29: F.adjust_hue(XF, 0.2) and F.adjust_hue(XU, -0.3)
    hue_f = [[[0.49411720037460327, 0.05882352590560913, 0.8235294222831726],
              [0.6705877780914307, 0.23529411852359772, 1.0]],
             [[0.0, 0.7647058963775635, 0.6117647886276245],
              [0.1764705777168274, 0.9411764740943909, 0.7882353067398071]],
             [[0.7058823704719543, 0.5529410243034363, 0.11764705181121826],
              [0.8823529481887817, 0.7294116616249084, 0.29411768913269043]]]
    hue_u = [[[188, 225, 6, 43], [107, 144, 181, 191], [228, 9, 46, 110]],
             [[158, 195, 194, 231], [12, 49, 86, 161], [198, 197, 234, 15]],
             [[0, 37, 112, 149], [148, 185, 222, 3], [40, 115, 152, 151]]]
    np.testing.assert_allclose(F.adjust_hue(gt.tensor(XF), 0.2).numpy(), np.array(hue_f, np.float32), atol=1e-5)
    np.testing.assert_array_equal(F.adjust_hue(gt.tensor(XU), -0.3).numpy(), np.array(hue_u, np.uint8))


def test_adjust_one_channel_and_errors():
    x1 = gt.tensor(XF[:1])
    np.testing.assert_array_equal(F.adjust_hue(x1, 0.3).numpy(), XF[:1])
    np.testing.assert_array_equal(F.adjust_saturation(x1, 0.3).numpy(), XF[:1])
    with pytest.raises(ValueError):
        F.adjust_hue(gt.tensor(XF), 0.6)
    with pytest.raises(ValueError):
        F.adjust_brightness(gt.tensor(XF), -1)


def _blur_ref(a, kx, ky, sx, sy):
    """Separable Gaussian (normalized) over reflect-padded (C, H, W) float64."""
    def k1(n, s):
        x = np.linspace(-(n - 1) / 2, (n - 1) / 2, n)
        p = np.exp(-0.5 * (x / s) ** 2)
        return p / p.sum()
    k2 = np.outer(k1(ky, sy), k1(kx, sx))
    p = np.pad(a, ((0, 0), (ky // 2, ky // 2), (kx // 2, kx // 2)), mode="reflect")
    h, w = a.shape[1:]
    out = np.zeros_like(a, dtype=np.float64)
    for i in range(ky):
        for j in range(kx):
            out += k2[i, j] * p[:, i:i + h, j:j + w]
    return out


def test_gaussian_blur_float_and_default_sigma():
    rng = np.random.default_rng(0)
    a = rng.random((3, 6, 7)).astype(np.float32)
    np.testing.assert_allclose(F.gaussian_blur(gt.tensor(a), [5, 3], [0.8, 1.7]).numpy(),
                               _blur_ref(a.astype(np.float64), 5, 3, 0.8, 1.7), atol=1e-5)
    s = 0.3 * ((3 - 1) * 0.5 - 1) + 0.8  # torchvision's default sigma for kernel 3
    np.testing.assert_allclose(F.gaussian_blur(gt.tensor(a), 3).numpy(), _blur_ref(a.astype(np.float64), 3, 3, s, s),
                               atol=1e-5)


def test_gaussian_blur_matches_torchvision():
    # torchvision 0.29: F.gaussian_blur(XU, 3, 0.8) and F.gaussian_blur(XF, [3, 1], [1.0, 0.5])
    blur_u = [[[88, 108, 115, 100], [105, 124, 129, 110], [109, 129, 136, 121]],
              [[154, 141, 109, 96], [130, 117, 107, 112], [111, 93, 98, 117]],
              [[86, 105, 142, 162], [91, 110, 133, 135], [107, 126, 131, 113]]]
    blur_f = [[[0.22570358216762543, 0.4117647111415863, 0.597825825214386],
               [0.402174174785614, 0.5882353186607361, 0.7742964625358582]],
              [[0.5786447525024414, 0.4745155870914459, 0.47232410311698914],
               [0.7551153898239136, 0.6509861946105957, 0.6487947106361389]],
              [[0.35120531916618347, 0.3490138351917267, 0.2448846697807312],
               [0.5276758670806885, 0.5254844427108765, 0.421355277299881]]]
    np.testing.assert_array_equal(F.gaussian_blur(gt.tensor(XU), 3, 0.8).numpy(), np.array(blur_u, np.uint8))
    np.testing.assert_allclose(F.gaussian_blur(gt.tensor(XF), [3, 1], [1.0, 0.5]).numpy(), np.array(blur_f, np.float32),
                               atol=1e-5)


def test_pil_images():
    from PIL import Image, ImageEnhance
    pil = Image.fromarray(XU.transpose(1, 2, 0))
    assert np.array_equal(np.asarray(F.adjust_brightness(pil, 1.3)),
                          np.asarray(ImageEnhance.Brightness(pil).enhance(1.3)))
    assert np.array_equal(np.asarray(F.adjust_saturation(pil, 0.4)), np.asarray(ImageEnhance.Color(pil).enhance(0.4)))
    for t in (T.ColorJitter(0.4, 0.4, 0.4, 0.1), T.GaussianBlur(3), T.RandomGrayscale(1.0)):
        out = t(pil)
        assert out.size == pil.size and out.mode == "RGB"


def test_transform_reprs_as_torchvision():
    # the strings torchvision 0.29 prints for the same constructions
    assert repr(T.ColorJitter(0.4, 0.4, 0.4, 0.1)) == \
        "ColorJitter(brightness=(0.6, 1.4), contrast=(0.6, 1.4), saturation=(0.6, 1.4), hue=(-0.1, 0.1))"
    assert repr(T.ColorJitter()) == "ColorJitter(brightness=None, contrast=None, saturation=None, hue=None)"
    assert repr(T.ColorJitter((0.5, 1.2), hue=(-0.2, 0.1))) == \
        "ColorJitter(brightness=(0.5, 1.2), contrast=None, saturation=None, hue=(-0.2, 0.1))"
    assert repr(T.RandomGrayscale()) == "RandomGrayscale(p=0.1)"
    assert repr(T.GaussianBlur(3)) == "GaussianBlur(kernel_size=(3, 3), sigma=(0.1, 2.0))"
    assert repr(T.GaussianBlur((5, 3), (0.5, 1))) == "GaussianBlur(kernel_size=(5, 3), sigma=(0.5, 1))"
    assert repr(T.GaussianBlur(3, 0.7)) == "GaussianBlur(kernel_size=(3, 3), sigma=(0.7, 0.7))"
    two = [T.RandomGrayscale(), T.GaussianBlur(3)]
    body = "\n    RandomGrayscale(p=0.1)\n    GaussianBlur(kernel_size=(3, 3), sigma=(0.1, 2.0))\n)"
    assert repr(T.RandomApply(two, p=0.3)) == "RandomApply(\n    p=0.3" + body
    assert repr(T.RandomChoice(two)) == "RandomChoice(" + body + "(p=None)"
    assert repr(T.RandomChoice(two, p=[0.2, 0.8])) == "RandomChoice(" + body + "(p=[0.2, 0.8])"
    assert repr(T.RandomOrder(two)) == "RandomOrder(" + body


def test_colorjitter_ranges_and_errors():
    with pytest.raises(ValueError):
        T.ColorJitter(brightness=-0.1)
    with pytest.raises(ValueError):
        T.ColorJitter(hue=0.6)
    with pytest.raises(TypeError):
        T.ColorJitter(brightness=[1, 2, 3])
    assert T.ColorJitter(brightness=2).brightness == (0.0, 3.0)  # the lower end clipped at 0
    with pytest.raises(ValueError):
        T.GaussianBlur(4)


def test_colorjitter_is_a_composition_of_the_functional_forms():
    gt.manual_seed(3)
    order, b, c, s, h = T.ColorJitter.get_params((0.6, 1.4), (0.6, 1.4), (0.6, 1.4), (-0.1, 0.1))
    assert sorted(order.tolist()) == [0, 1, 2, 3]
    assert 0.6 <= b <= 1.4 and 0.6 <= c <= 1.4 and 0.6 <= s <= 1.4 and -0.1 <= h <= 0.1
    x = gt.tensor(XF)
    gt.manual_seed(3)
    got = T.ColorJitter(0.4, 0.4, 0.4, 0.1)(x).numpy()
    fns = [lambda y: F.adjust_brightness(y, b), lambda y: F.adjust_contrast(y, c),
           lambda y: F.adjust_saturation(y, s), lambda y: F.adjust_hue(y, h)]
    y = x
    for i in order.tolist():
        y = fns[i](y)
    np.testing.assert_array_equal(got, y.numpy())


def test_random_wrappers():
    x = gt.tensor(XF)
    gray = F.rgb_to_grayscale(x, 3).numpy()
    np.testing.assert_array_equal(T.RandomGrayscale(1.0)(x).numpy(), gray)
    np.testing.assert_array_equal(T.RandomGrayscale(0.0)(x).numpy(), XF)
    np.testing.assert_array_equal(T.RandomApply([T.RandomGrayscale(1.0)], p=0.0)(x).numpy(), XF)
    np.testing.assert_array_equal(T.RandomApply([T.RandomGrayscale(1.0)], p=1.0)(x).numpy(), gray)
    random.seed(0)
    out = T.RandomChoice([T.Lambda(lambda y: 1), T.Lambda(lambda y: 2)], p=[0.0, 1.0])(x)
    assert out == 2
    random.seed(0)
    seen = T.RandomOrder([T.Lambda(lambda y: y + "a"), T.Lambda(lambda y: y + "b")])("")
    assert sorted(seen) == ["a", "b"]
    blurred = T.GaussianBlur(3, sigma=(0.5, 0.5))(x).numpy()
    np.testing.assert_allclose(blurred, F.gaussian_blur(x, 3, 0.5).numpy(), atol=0)


# ---- models: key counts, parameter counts and shapes as torchvision 0.29 reports ----

def _count(m):
    return sum(p.numel() for p in m.parameters())


def test_inception_v3_state_dict():
    m = models.inception_v3(init_weights=False)
    sd = m.state_dict()
    # torchvision 0.29: len(state_dict) 580, 27161264 parameters; 566 / 23834568 without the aux head
    assert len(sd) == 580 and _count(m) == 27161264
    assert tuple(sd["Conv2d_1a_3x3.conv.weight"].shape) == (32, 3, 3, 3)
    assert tuple(sd["Mixed_6b.branch7x7_2.conv.weight"].shape) == (128, 128, 1, 7)
    assert tuple(sd["Mixed_7c.branch3x3dbl_3b.bn.running_var"].shape) == (384,)
    assert tuple(sd["AuxLogits.conv1.conv.weight"].shape) == (768, 128, 5, 5)
    assert tuple(sd["AuxLogits.fc.weight"].shape) == (1000, 768)
    assert tuple(sd["fc.weight"].shape) == (1000, 2048)
    assert list(sd)[:3] == ["Conv2d_1a_3x3.conv.weight", "Conv2d_1a_3x3.bn.weight", "Conv2d_1a_3x3.bn.bias"]
    small = models.inception_v3(aux_logits=False, init_weights=False)
    assert len(small.state_dict()) == 566 and _count(small) == 23834568 and small.AuxLogits is None


def test_googlenet_state_dict():
    m = models.googlenet(aux_logits=True, init_weights=False)
    sd = m.state_dict()
    # torchvision 0.29: 364 keys and 13004888 parameters with aux heads; 344 / 6624904 without
    assert len(sd) == 364 and _count(m) == 13004888
    assert tuple(sd["conv1.conv.weight"].shape) == (64, 3, 7, 7)
    assert tuple(sd["inception3a.branch3.1.conv.weight"].shape) == (32, 16, 3, 3)
    assert tuple(sd["inception4e.branch4.1.bn.num_batches_tracked"].shape) == ()
    assert tuple(sd["aux1.fc1.weight"].shape) == (1024, 2048)
    assert tuple(sd["aux2.conv.conv.weight"].shape) == (128, 528, 1, 1)
    assert models.googlenet(init_weights=False).aux1 is not None  # torchvision builds the heads by default too
    small = models.googlenet(aux_logits=False, init_weights=False)
    assert len(small.state_dict()) == 344 and _count(small) == 6624904 and small.aux1 is None


def test_googlenet_outputs():
    gt.manual_seed(0)
    m = models.googlenet(aux_logits=True, init_weights=True, num_classes=10)
    x = gt.rand(2, 3, 64, 64)
    with gt.no_grad():
        out = m.train()(x)
        assert type(out).__name__ == "GoogLeNetOutputs"
        assert out._fields == ("logits", "aux_logits2", "aux_logits1")
        assert all(tuple(t.shape) == (2, 10) for t in out)
        y = m.eval()(x)
    assert tuple(y.shape) == (2, 10)


def test_inception_v3_outputs():
    gt.manual_seed(0)
    m = models.inception_v3(init_weights=True, num_classes=7, transform_input=True)
    with gt.no_grad():
        y = m.eval()(gt.rand(1, 3, 75, 75))  # torchvision's minimum size
        assert tuple(y.shape) == (1, 7)
        out = m.train()(gt.rand(2, 3, 299, 299))  # the aux head needs 299 (and batch > 1 for BatchNorm)
    assert type(out).__name__ == "InceptionOutputs" and out._fields == ("logits", "aux_logits")
    assert tuple(out.logits.shape) == (2, 7) and tuple(out.aux_logits.shape) == (2, 7)


def test_registry_and_weights_enums():
    assert "inception_v3" in models.list_models() and "googlenet" in models.list_models()
    assert models.get_model_weights("inception_v3") is models.Inception_V3_Weights
    assert models.Inception_V3_Weights.DEFAULT.meta["num_params"] == 27161264
    assert models.GoogLeNet_Weights.IMAGENET1K_V1.url.endswith("googlenet-1378be20.pth")
    assert models.get_model("googlenet", init_weights=False, num_classes=5).fc.out_features == 5
