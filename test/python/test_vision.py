"""gt.vision (torchvision for GT): datasets read from local files in torchvision's layout,
transforms against NumPy, make_grid / save_image, and a pytorch/examples-style MNIST script
run through `python -m gt.as_torch` with `from torchvision import datasets, transforms`."""
import gzip
import pickle
import random
import subprocess
import sys

import numpy as np
import pytest

import gt

Image = pytest.importorskip("PIL.Image")  # Pillow: a GT dependency (scripts/install-deps.sh)
from gt.vision import datasets, transforms, utils

rng = np.random.default_rng(3)


def write_idx(path, array, compress):
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in array.shape)
    data = header + array.astype(np.uint8).tobytes()
    with (gzip.open if compress else open)(path, "wb") as f:
        f.write(data)


def make_mnist(root, folder="MNIST", n_train=12, n_test=5, compress=True):
    raw = root / folder / "raw"
    raw.mkdir(parents=True)
    images = {"train": rng.integers(0, 256, (n_train, 28, 28)), "t10k": rng.integers(0, 256, (n_test, 28, 28))}
    labels = {"train": rng.integers(0, 10, n_train), "t10k": rng.integers(0, 10, n_test)}
    for split in ("train", "t10k"):
        suffix = ".gz" if compress else ""
        write_idx(str(raw / f"{split}-images-idx3-ubyte{suffix}"), images[split], compress)
        write_idx(str(raw / f"{split}-labels-idx1-ubyte{suffix}"), labels[split], compress)
    return images, labels


@pytest.mark.parametrize("compress", [True, False])
def test_mnist_reads_idx_files_and_transforms_them(tmp_path, compress):
    images, labels = make_mnist(tmp_path, compress=compress)
    ds = datasets.MNIST(str(tmp_path), train=True)
    assert len(ds) == 12 and ds.data.shape == (12, 28, 28)
    image, target = ds[3]
    assert isinstance(image, Image.Image) and image.mode == "L" and target == int(labels["train"][3])
    np.testing.assert_array_equal(np.asarray(image), images["train"][3])
    tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])
    test = datasets.MNIST(str(tmp_path), train=False, transform=tf, target_transform=lambda t: t + 100)
    x, t = test[2]
    assert x.shape == (1, 28, 28) and x.dtype == gt.float32 and t == int(labels["t10k"][2]) + 100
    np.testing.assert_allclose(x.numpy()[0], (images["t10k"][2] / 255.0 - 0.1307) / 0.3081, rtol=1e-5, atol=1e-6)
    xb, yb = next(iter(gt.utils.data.DataLoader(test, batch_size=4)))
    assert xb.shape == (4, 1, 28, 28) and yb.tolist() == [int(v) + 100 for v in labels["t10k"][:4]]
    # printed as torchvision prints them (the tutorials show these)
    assert repr(tf) == "Compose(\n    ToTensor()\n    Normalize(mean=(0.1307,), std=(0.3081,))\n)"
    assert repr(datasets.MNIST(str(tmp_path), train=False, transform=transforms.ToTensor())) == (
        f"Dataset MNIST\n    Number of datapoints: 5\n    Root location: {tmp_path}\n    Split: Test\n"
        "    StandardTransform\nTransform: ToTensor()")
    assert repr(ds) == f"Dataset MNIST\n    Number of datapoints: 12\n    Root location: {tmp_path}\n    Split: Train"


def test_mnist_data_and_targets_are_tensors_and_can_be_replaced(tmp_path):
    # As torchvision's: scripts do ds.data.unsqueeze(1), ds.targets == 3, ds.data = ds.data[idx].
    images, labels = make_mnist(tmp_path)
    ds = datasets.MNIST(str(tmp_path), train=True)
    assert isinstance(ds.data, gt.Tensor) and ds.data.dtype == gt.uint8 and ds.data.shape == (12, 28, 28)
    assert isinstance(ds.targets, gt.Tensor) and ds.targets.dtype == gt.int64
    np.testing.assert_array_equal(ds.data.unsqueeze(1).clone().numpy()[:, 0], images["train"])
    np.testing.assert_array_equal(np.array(ds.targets.clone(), dtype=None, copy=None), labels["train"])
    keep = (ds.targets % 2 == 0).nonzero().flatten()
    ds.data, ds.targets = ds.data[keep], ds.targets[keep]  # a subset, the usual way
    want = np.flatnonzero(labels["train"] % 2 == 0)
    assert len(ds) == len(want)
    image, target = ds[1]
    np.testing.assert_array_equal(np.asarray(image), images["train"][want[1]])
    assert target == int(labels["train"][want[1]])
    ds.data = images["train"][:3]  # a NumPy array works too
    assert len(ds) == 3 and isinstance(ds.data, gt.Tensor) and ds.data.shape == (3, 28, 28)


def test_fashion_mnist_folder_and_missing_files(tmp_path):
    make_mnist(tmp_path, folder="FashionMNIST")
    ds = datasets.FashionMNIST(str(tmp_path))
    assert len(ds) == 12 and ds.classes[9] == "Ankle boot"
    with pytest.raises(RuntimeError, match="dataset not found.*download=True"):
        datasets.MNIST(str(tmp_path))
    with pytest.raises(RuntimeError, match="GT does not download datasets"):
        datasets.MNIST(str(tmp_path), download=True)


def test_cifar10_reads_python_pickles(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    batches = {}
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batches[name] = (rng.integers(0, 256, (2, 3072)).astype(np.uint8), [int(v) for v in rng.integers(0, 10, 2)])
        with open(folder / name, "wb") as f:
            pickle.dump({"data": batches[name][0], "labels": batches[name][1]}, f)
    with open(folder / "batches.meta", "wb") as f:
        pickle.dump({"label_names": [f"c{i}" for i in range(10)]}, f)
    train = datasets.CIFAR10(str(tmp_path), train=True, transform=transforms.ToTensor())
    assert len(train) == 10 and train.classes[3] == "c3"
    x, t = train[2]  # data_batch_2's first image
    expected = batches["data_batch_2"][0][0].reshape(3, 32, 32) / 255.0
    np.testing.assert_allclose(x.numpy(), expected, rtol=1e-6)
    assert t == batches["data_batch_2"][1][0]
    assert len(datasets.CIFAR10(str(tmp_path), train=False)) == 2


def test_image_folder_and_fake_data(tmp_path):
    for c, n in (("cat", 2), ("dog", 1)):
        (tmp_path / c).mkdir()
        for i in range(n):
            Image.fromarray(rng.integers(0, 256, (6, 5, 3), dtype=np.uint8)).save(tmp_path / c / f"{i}.png")
    (tmp_path / "dog" / "notes.txt").write_text("not an image")
    ds = datasets.ImageFolder(str(tmp_path), transform=transforms.ToTensor())
    assert ds.classes == ["cat", "dog"] and ds.targets == [0, 0, 1] and len(ds) == 3
    assert ds[2][0].shape == (3, 6, 5)
    fake = datasets.FakeData(size=4, image_size=(3, 8, 8), num_classes=3)
    a, b = fake[1], fake[1]
    assert np.array_equal(np.asarray(a[0]), np.asarray(b[0])) and a[1] == b[1] and 0 <= a[1] < 3
    with pytest.raises(IndexError):
        fake[4]


def test_geometric_transforms_on_pil_numpy_and_tensors():
    a = rng.integers(0, 256, (6, 8, 3), dtype=np.uint8)
    pil = Image.fromarray(a)
    np.testing.assert_array_equal(np.asarray(transforms.CenterCrop(4)(pil)), a[1:5, 2:6])
    np.testing.assert_array_equal(transforms.CenterCrop((2, 6))(a), a[2:4, 1:7])
    np.testing.assert_array_equal(np.asarray(transforms.RandomHorizontalFlip(p=1.0)(pil)), a[:, ::-1])
    np.testing.assert_array_equal(transforms.RandomVerticalFlip(p=1.0)(a), a[::-1])
    t = transforms.ToTensor()(pil)
    np.testing.assert_allclose(transforms.RandomHorizontalFlip(p=1.0)(t).numpy(), a[:, ::-1].transpose(2, 0, 1) / 255.0,
                               rtol=1e-6)
    padded = np.asarray(transforms.Pad(2, fill=7)(pil))
    assert padded.shape == (10, 12, 3) and (padded[:2] == 7).all()
    np.testing.assert_array_equal(padded[2:-2, 2:-2], a)
    random.seed(0)
    crop = np.asarray(transforms.RandomCrop(6, padding=1)(pil))
    random.seed(0)
    top, left = random.randint(0, 8 - 6), random.randint(0, 10 - 6)
    np.testing.assert_array_equal(crop, np.pad(a, ((1, 1), (1, 1), (0, 0)))[top:top + 6, left:left + 6])
    assert transforms.Resize((3, 4))(pil).size == (4, 3) and transforms.Resize(3)(pil).size == (4, 3)
    assert transforms.RandomResizedCrop(5)(pil).size == (5, 5)
    # A tensor is resized by interpolate with antialias, as torchvision's: Pillow's filter, so
    # within one level of Pillow's uint8 result (which rounds in fixed point).
    u8 = transforms.PILToTensor()(pil)
    small = transforms.Resize((3, 4))(u8)
    assert small.dtype == gt.uint8 and small.shape == (3, 3, 4)
    assert np.abs(small.numpy().transpose(1, 2, 0).astype(int) - np.asarray(pil.resize((4, 3), 2)).astype(int)).max() <= 1
    assert transforms.Resize(3)(t).shape == (3, 3, 4) and transforms.RandomResizedCrop(5)(t).shape == (3, 5, 5)
    with pytest.raises(TypeError, match="PIL image or a tensor"):
        transforms.Resize(3)(a)
    assert transforms.Grayscale()(pil).mode == "L" and transforms.Grayscale(3)(pil).mode == "RGB"
    np.testing.assert_array_equal(np.asarray(transforms.ToPILImage()(t)), a)
    assert transforms.PILToTensor()(pil).dtype == gt.uint8


def test_normalize_per_channel_and_errors():
    x = gt.tensor(rng.random((3, 4, 5)).astype(np.float32))
    y = transforms.Normalize((0.5, 0.4, 0.3), (0.2, 0.25, 0.5))(x)
    expected = (x.numpy() - np.array([0.5, 0.4, 0.3])[:, None, None]) / np.array([0.2, 0.25, 0.5])[:, None, None]
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-5)
    with pytest.raises(ValueError, match="std evaluated to zero"):
        transforms.Normalize((0.5,), (0.0,))
    with pytest.raises(TypeError, match="ToTensor first"):
        transforms.Normalize((0.5,), (0.5,))(np.zeros((1, 2, 2)))


def test_make_grid_and_save_image(tmp_path):
    batch = gt.tensor(rng.random((5, 1, 4, 3)).astype(np.float32))
    grid = utils.make_grid(batch, nrow=2, padding=1)
    assert grid.shape == (3, 3 * 5 + 1, 2 * 4 + 1)  # 3 rows of 2, a gray image repeated to RGB
    np.testing.assert_allclose(grid.numpy()[0, 1:5, 1:4], batch.numpy()[0, 0], rtol=1e-6)
    one = utils.make_grid(batch[:1])  # one image: as it is, RGB, no padding (torchvision's)
    assert one.shape == (3, 4, 3) and np.array_equal(one.numpy()[1], batch.numpy()[0, 0])
    utils.save_image(batch, str(tmp_path / "grid.png"), nrow=2, padding=1)
    saved = np.asarray(Image.open(tmp_path / "grid.png"))
    assert saved.shape == (16, 9, 3)
    np.testing.assert_array_equal(saved[1:5, 1:4, 0], np.clip(batch.numpy()[0, 0] * 255 + 0.5, 0, 255).astype(np.uint8))


def test_an_mnist_script_runs_unchanged_through_as_torch(tmp_path):
    make_mnist(tmp_path / "data", n_train=64, n_test=16)
    script = tmp_path / "main.py"
    script.write_text(
        "import torch, torch.nn as nn, torch.nn.functional as F, torch.optim as optim\n"
        "from torchvision import datasets, transforms\n"
        "tf = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.1307,), (0.3081,))])\n"
        "train = torch.utils.data.DataLoader(datasets.MNIST('data', train=True, download=True, transform=tf),\n"
        "                                    batch_size=16, shuffle=True)\n"
        "model = nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(676, 10))\n"
        "opt = optim.Adadelta(model.parameters(), lr=1.0)\n"
        "for data, target in train:\n"
        "    opt.zero_grad(); loss = F.nll_loss(F.log_softmax(model(data), 1), target); loss.backward(); opt.step()\n"
        "print('loss', f'{loss.item():.4f}', len(train.dataset))\n")
    out = subprocess.run([sys.executable, "-m", "gt.as_torch", str(script)], capture_output=True, text=True,
                         timeout=300, cwd=str(tmp_path))
    assert out.returncode == 0, out.stderr[-2000:]
    assert "loss" in out.stdout and out.stdout.strip().endswith(" 64")


def test_compose_runs_totensor_and_normalize_on_the_client_with_the_same_values():
    a = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    fused = transforms.Compose([transforms.ToTensor(), transforms.Normalize(mean, std)])(Image.fromarray(a))
    apart = transforms.Normalize(mean, std)(transforms.ToTensor()(Image.fromarray(a)))
    assert fused.dtype == gt.float32 and fused.shape == (3, 5, 7)
    np.testing.assert_array_equal(fused.numpy(), apart.numpy())  # bit for bit
    one = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5,), (0.25,)), transforms.Lambda(lambda t: t * 2)])
    np.testing.assert_array_equal(one(a[:, :, :1]).numpy(), ((a[:, :, :1].transpose(2, 0, 1) / np.float32(255) - np.float32(0.5))
                                                            / np.float32(0.25) * 2).astype(np.float32))


def test_resnets_match_torchvisions_layout_and_train():
    from gt.vision import models
    # torchvision's documented sizes at 1000 classes
    assert sum(p.numel() for p in models.resnet18().parameters()) == 11_689_512
    assert sum(p.numel() for p in models.resnet50().parameters()) == 25_557_032
    m = models.resnet18(num_classes=10)
    keys = list(m.state_dict())
    assert keys[:6] == ["conv1.weight", "bn1.weight", "bn1.bias", "bn1.running_mean", "bn1.running_var",
                        "bn1.num_batches_tracked"]
    assert "layer2.0.downsample.0.weight" in keys and "layer1.0.downsample.0.weight" not in keys and keys[-1] == "fc.bias"
    assert m.fc.in_features == 512 and len(list(m.children())) == 10
    # scripts swap the stem for grayscale input and cut the classifier off (pytorch/examples' siamese network)
    m.conv1 = gt.nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3, bias=False)
    trunk = gt.nn.Sequential(*list(m.children())[:-1])
    x = gt.randn(4, 1, 28, 28)
    assert trunk(x).shape == (4, 512, 1, 1)
    opt = gt.optim.SGD(m.parameters(), lr=0.05)
    y = gt.tensor([0, 1, 2, 3])
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = gt.nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]


def test_vision_models_pretrained_weights_load_from_the_hub_cache(tmp_path, monkeypatch):
    """weights= as torchvision takes it (a member, its name, DEFAULT, pretrained=True) loads
    torchvision's checkpoint from gt.hub's cache under the URL's file name; a missing one is
    downloaded from torchvision's URL (here: refused, the test has no network)."""
    from gt import hub
    from gt.vision import models
    monkeypatch.setenv("GT_HUB_DIR", str(tmp_path))
    asked = []

    def no_network(url, dst, hash_prefix=None, progress=True):
        asked.append((url, hash_prefix))
        raise RuntimeError(f"gt.hub: downloading {url} failed: no network")
    monkeypatch.setattr(hub, "download_url_to_file", no_network)
    gt.manual_seed(0)
    source = models.resnet18()
    (tmp_path / "checkpoints").mkdir()
    gt.save(source.state_dict(), str(tmp_path / "checkpoints" / "resnet18-f37072fd.pth"))
    x = gt.randn(1, 3, 32, 32)
    expected = source.eval()(x).numpy()
    for weights in (models.ResNet18_Weights.IMAGENET1K_V1, "IMAGENET1K_V1", "DEFAULT", "ResNet18_Weights.DEFAULT"):
        loaded = models.resnet18(weights=weights).eval()
        np.testing.assert_array_equal(loaded(x).numpy(), expected)
    np.testing.assert_array_equal(models.resnet18(pretrained=True).eval()(x).numpy(), expected)
    np.testing.assert_array_equal(models.get_model("resnet18", weights="DEFAULT").eval()(x).numpy(), expected)
    assert asked == []
    with pytest.raises(RuntimeError, match="resnet50-11ad3fa6.pth failed"):
        models.resnet50(weights=models.ResNet50_Weights.DEFAULT)
    assert asked == [("https://download.pytorch.org/models/resnet50-11ad3fa6.pth", "11ad3fa6")]
    with pytest.raises(ValueError, match="1000 classes, not num_classes=10"):
        models.resnet18(weights="DEFAULT", num_classes=10)
    with pytest.raises(ValueError, match="not both"):
        models.resnet18(weights="DEFAULT", pretrained=True)
    with pytest.raises(ValueError, match="ResNet18_Weights has no weights 'IMAGENET1K_V2'"):
        models.resnet18(weights="IMAGENET1K_V2")
    with pytest.raises(TypeError, match="a ResNet18_Weights or its name"):
        models.resnet18(weights=models.VGG11_Weights.DEFAULT)


def test_vision_weights_enums_and_their_transforms():
    from gt.vision import models
    W = models.ResNet50_Weights
    assert W.DEFAULT is W.IMAGENET1K_V2 is W["DEFAULT"] and [w.name for w in W] == ["IMAGENET1K_V1", "IMAGENET1K_V2"]
    assert W.IMAGENET1K_V1.url == "https://download.pytorch.org/models/resnet50-0676ba61.pth"
    assert W.DEFAULT.meta["num_params"] == 25557032
    assert models.get_weights("VGG16_Weights.IMAGENET1K_FEATURES") is models.VGG16_Weights.IMAGENET1K_FEATURES
    assert models.get_model_weights("wide_resnet50_2") is models.Wide_ResNet50_2_Weights
    assert models.get_model_weights(models.alexnet) is models.AlexNet_Weights
    with pytest.raises(ValueError, match="expected ENUM.MEMBER"):
        models.get_weights("resnet50")
    # The preset: shorter side 232 (V2), center 224, [0, 1], normalized by ImageNet's statistics.
    Image = pytest.importorskip("PIL.Image")
    pixels = np.random.default_rng(0).integers(0, 256, (300, 400, 3), dtype=np.uint8)
    preset = W.DEFAULT.transforms()
    assert preset.resize_size == [232] and preset.crop_size == [224]
    out = preset(Image.fromarray(pixels)).numpy()
    resized = np.asarray(Image.fromarray(pixels).resize((309, 232), Image.BILINEAR), np.float32) / 255
    top, left = (232 - 224) // 2, (309 - 224) // 2
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    crop = resized[top:top + 224, left:left + 224]
    np.testing.assert_allclose(out, ((crop - mean) / std).transpose(2, 0, 1), rtol=1e-5, atol=1e-5)


def test_vision_models_unknown_names():
    from gt.vision import models
    with pytest.raises(ValueError, match="unknown model 'resnet19'"):
        models.get_model("resnet19")
    assert "vgg16_bn" in models.list_models() and "alexnet" in models.list_models()
    features = models.vgg.make_layers(models.vgg._CONFIGS["A"], batch_norm=True)
    assert [type(l).__name__ for l in features][:4] == ["Conv2d", "BatchNorm2d", "ReLU", "MaxPool2d"]
    assert features(gt.randn(1, 3, 32, 32)).shape == (1, 512, 1, 1)


def test_transforms_functional_and_default_dtype():
    # `import torchvision.transforms.functional as TF` (augmentation code that draws its own
    # parameters); ToTensor follows gt.set_default_dtype, as torchvision's.
    import importlib
    TF = importlib.import_module("gt.vision.transforms.functional")
    from PIL import Image
    a = np.arange(60, dtype=np.uint8).reshape(4, 5, 3)
    pil = Image.fromarray(a)
    t = TF.to_tensor(pil)
    np.testing.assert_allclose(t.numpy(), a.transpose(2, 0, 1) / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(TF.hflip(t).numpy(), t.numpy()[..., ::-1])
    np.testing.assert_array_equal(np.asarray(TF.vflip(pil)), a[::-1])
    np.testing.assert_array_equal(TF.crop(t, 1, 2, 2, 3).numpy(), t.numpy()[:, 1:3, 2:5])
    assert TF.center_crop(t, 2).shape == (3, 2, 2) and TF.resize(t, (2, 3)).shape == (3, 2, 3)
    assert TF.pad(t, 1).shape == (3, 6, 7) and TF.get_image_size(pil) == [5, 4] and TF.get_dimensions(t) == [3, 4, 5]
    np.testing.assert_allclose(TF.normalize(t, [0.5] * 3, [0.5] * 3).numpy(), (t.numpy() - 0.5) / 0.5, rtol=1e-6)
    gray = TF.rgb_to_grayscale(t).numpy()[0]
    np.testing.assert_allclose(gray, (a / 255.0) @ np.array([0.2989, 0.587, 0.114]), rtol=1e-5)
    assert np.asarray(TF.to_pil_image(t)).tolist() == a.tolist()
    gt.set_default_dtype(gt.float64)
    try:
        t64 = transforms.ToTensor()(pil)
        assert t64.dtype == gt.float64 and t64[0, 0, 1].item() == 3 / 255
    finally:
        gt.set_default_dtype(gt.float32)
    grid = gt.vision.utils.make_grid(gt.zeros(4, 1, 2, 2, dtype=gt.float64))
    assert grid.dtype == gt.float64  # (a float64 batch stays float64, as torchvision's)


def test_transforms_print_as_torchvisions():
    assert repr(transforms.Compose([transforms.RandomCrop(32, padding=4), transforms.RandomHorizontalFlip()])) == \
        "Compose(\n    RandomCrop(size=(32, 32), padding=4)\n    RandomHorizontalFlip(p=0.5)\n)"
    assert repr(transforms.Pad(4)) == "Pad(padding=4, fill=0, padding_mode=constant)"
    assert repr(transforms.Resize(32)) == "Resize(size=32, interpolation=bilinear, max_size=None, antialias=True)"
    assert repr(transforms.RandomResizedCrop(224)) == ("RandomResizedCrop(size=(224, 224), scale=(0.08, 1.0), "
                                                       "ratio=(0.75, 1.3333), interpolation=bilinear, antialias=True)")
    assert repr(transforms.CenterCrop(3)) == "CenterCrop(size=(3, 3))" and repr(transforms.Grayscale()) == \
        "Grayscale(num_output_channels=1)"
