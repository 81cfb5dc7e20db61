"""torchvision.datasets for GT: MNIST, FashionMNIST, KMNIST, CIFAR10, CIFAR100, ImageFolder,
DatasetFolder and FakeData, reading local files (see gt.vision). Each item is (image, target):
a PIL image (mode 'L' for the MNISTs, 'RGB' for CIFAR) and an int class, each passed through
`transform` / `target_transform` when given."""
import gzip
import os
import pickle

import numpy as np

from ..utils.data import Dataset


def _pil():
    from PIL import Image  # Pillow (installed with GT's dependencies)
    return Image


def _missing(name, folder, files, url):
    raise RuntimeError(f"{name}: dataset not found: {', '.join(files)} are not all in {folder}. GT does not "
                       f"download datasets; fetch them (torchvision gets them from {url}) and put them there")


def read_idx(path):
    """An IDX file (gzipped or not: magic 0x0000 08 <ndim>, big-endian int32 sizes, uint8 data)
    as a NumPy uint8 array. Raises ValueError for another format."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    ndim = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim))
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(shape)


def _transforms_repr(transform, target_transform):
    """torchvision's StandardTransform repr (its first line is indented in a dataset's, the rest not)."""
    lines = ["StandardTransform"]
    for head, t in (("Transform: ", transform), ("Target transform: ", target_transform)):
        if t is not None:
            text = repr(t).splitlines()
            lines += [head + text[0]] + [" " * len(head) + line for line in text[1:]]
    return "\n".join(lines)


class VisionDataset(Dataset):
    """A dataset of (image, target) with optional `transform` and `target_transform`."""

    def __init__(self, root, transform=None, target_transform=None):
        self.root = os.path.expanduser(str(root))
        self.transform, self.target_transform = transform, target_transform

    def __repr__(self):
        """torchvision's: the class, size, root, extra_repr() and the transforms, one per line."""
        body = [f"Number of datapoints: {len(self)}"]
        if self.root is not None:
            body.append(f"Root location: {self.root}")
        body += self.extra_repr().splitlines()
        if self.transform is not None or self.target_transform is not None:
            body.append(_transforms_repr(self.transform, self.target_transform))
        return "\n".join([f"Dataset {type(self).__name__}"] + ["    " + line for line in body])

    def extra_repr(self):
        return ""

    def _apply(self, image, target):
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target


class MNIST(VisionDataset):
    """The MNIST digits (60,000 train / 10,000 test 28x28 grayscale images, classes 0-9) from
    root/MNIST/raw: train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte,
    t10k-labels-idx1-ubyte (each optionally .gz). `data` (N, 28, 28) uint8 and `targets` (N,)
    int64 are gt Tensors, as torchvision's (made on first use; the files' values stay on the
    client too, so that __getitem__ reads no tensor). Assigning either (a Tensor or a NumPy
    array: `ds.data = ds.data[:1000]`) changes what __getitem__ and len() see."""

    classes = [f"{i} - {w}" for i, w in enumerate(["zero", "one", "two", "three", "four", "five", "six", "seven",
                                                   "eight", "nine"])]
    url = "https://ossci-datasets.s3.amazonaws.com/mnist/"

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform, target_transform)
        self.train = train
        prefix = "train" if train else "t10k"
        names = [f"{prefix}-images-idx3-ubyte", f"{prefix}-labels-idx1-ubyte"]
        paths = []
        for n in names:
            found = [p for p in (os.path.join(self.raw_folder, n), os.path.join(self.raw_folder, n + ".gz"))
                     if os.path.exists(p)]
            if not found:
                if not download:
                    raise RuntimeError(f"{type(self).__name__}: dataset not found in {self.raw_folder}. You can use "
                                       "download=True to download it")
                _missing(type(self).__name__, self.raw_folder, [x + ".gz" for x in names], self.url)
            paths.append(found[0])
        self._arrays = {"data": read_idx(paths[0]), "targets": read_idx(paths[1]).astype(np.int64)}
        self._tensors = {}
        if len(self._arrays["data"]) != len(self._arrays["targets"]):
            raise ValueError(f"{type(self).__name__}: {len(self._arrays['data'])} images but "
                             f"{len(self._arrays['targets'])} labels")

    def extra_repr(self):
        return f"Split: {'Train' if self.train is True else 'Test'}"

    def _tensor(self, name):
        if name not in self._tensors:
            from .. import _tensor
            self._tensors[name] = _tensor.tensor(self._arrays[name])
        return self._tensors[name]

    def _array(self, name):
        if self._arrays.get(name) is None:
            self._arrays[name] = self._tensors[name].numpy()
        return self._arrays[name]

    def _assign(self, name, value):
        from .. import _tensor
        if isinstance(value, _tensor.Tensor):
            self._tensors[name], self._arrays[name] = value, None
        else:
            self._arrays[name] = np.asarray(value)
            self._tensors.pop(name, None)

    data = property(lambda self: self._tensor("data"), lambda self, v: self._assign("data", v),
                    doc="(N, 28, 28) uint8 images, a gt Tensor")
    targets = property(lambda self: self._tensor("targets"), lambda self, v: self._assign("targets", v),
                       doc="(N,) int64 labels, a gt Tensor")

    @property
    def raw_folder(self):
        return os.path.join(self.root, type(self).__name__, "raw")

    @property
    def class_to_idx(self):
        return {c: i for i, c in enumerate(self.classes)}

    def __len__(self):
        if self._arrays.get("data") is None:  # a tensor assigned: its shape, without fetching it
            return int(self._tensors["data"].shape[0])
        return len(self._arrays["data"])

    def __getitem__(self, index):
        return self._apply(_pil().fromarray(self._array("data")[index]), int(self._array("targets")[index]))


class FashionMNIST(MNIST):
    """Zalando's Fashion-MNIST (MNIST's format and sizes) from root/FashionMNIST/raw."""
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
               "Ankle boot"]
    url = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"


class KMNIST(MNIST):
    """Kuzushiji-MNIST (MNIST's format and sizes) from root/KMNIST/raw."""
    classes = ["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"]
    url = "http://codh.rois.ac.jp/kmnist/dataset/kmnist/"


class CIFAR10(VisionDataset):
    """CIFAR-10 (50,000 train / 10,000 test 32x32 RGB images, 10 classes) from the Python
    pickles in root/cifar-10-batches-py (data_batch_1..5, test_batch, batches.meta). `data`
    (N, 32, 32, 3) uint8 and `targets` (a list of ints), as torchvision."""

    base_folder, meta_key, label_key = "cifar-10-batches-py", "label_names", "labels"
    train_list = [f"data_batch_{i}" for i in range(1, 6)]
    test_list = ["test_batch"]
    meta_file = "batches.meta"
    url = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz (unpacked)"

    def __init__(self, root, train=True, transform=None, target_transform=None, download=False):
        super().__init__(root, transform, target_transform)
        self.train = train
        folder = os.path.join(self.root, self.base_folder)
        files = (self.train_list if train else self.test_list) + [self.meta_file]
        if not all(os.path.exists(os.path.join(folder, f)) for f in files):
            if not download:
                raise RuntimeError(f"{type(self).__name__}: dataset not found or corrupted in {folder}. You can use "
                                   "download=True to download it")
            _missing(type(self).__name__, folder, files, self.url)
        data, targets = [], []
        for f in files[:-1]:
            with open(os.path.join(folder, f), "rb") as fh:
                entry = pickle.load(fh, encoding="latin1")
            data.append(np.asarray(entry["data"], dtype=np.uint8))
            targets.extend(entry["labels"] if "labels" in entry else entry["fine_labels"])
        self.data = np.vstack(data).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1).copy()
        self.targets = [int(t) for t in targets]
        with open(os.path.join(folder, self.meta_file), "rb") as fh:
            self.classes = pickle.load(fh, encoding="latin1")[self.meta_key]
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}

    def __len__(self):
        return len(self.data)

    def __getitem__(self, index):
        return self._apply(_pil().fromarray(self.data[index]), self.targets[index])

    def extra_repr(self):
        return f"Split: {'Train' if self.train is True else 'Test'}"


class CIFAR100(CIFAR10):
    """CIFAR-100 (fine labels, 100 classes) from root/cifar-100-python (train, test, meta)."""
    base_folder, meta_key, label_key = "cifar-100-python", "fine_label_names", "fine_labels"
    train_list, test_list, meta_file = ["train"], ["test"], "meta"
    url = "https://www.cs.toronto.edu/~kriz/cifar-100-python.tar.gz (unpacked)"


IMG_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


def default_loader(path):
    """The image at `path` as an RGB PIL image."""
    with open(path, "rb") as f:
        return _pil().open(f).convert("RGB")


class DatasetFolder(VisionDataset):
    """Samples in root/<class>/**/<file>: classes are the sorted subfolder names, each file
    with one of `extensions` (or accepted by `is_valid_file`) a sample loaded with `loader`.
    `samples` / `imgs`: [(path, class index)], `targets`: the class indices."""

    def __init__(self, root, loader, extensions=None, transform=None, target_transform=None, is_valid_file=None):
        super().__init__(root, transform, target_transform)
        if (extensions is None) == (is_valid_file is None):
            raise ValueError("DatasetFolder: pass exactly one of extensions and is_valid_file")
        valid = is_valid_file or (lambda p: p.lower().endswith(tuple(extensions)))
        self.classes = sorted(e.name for e in os.scandir(self.root) if e.is_dir())
        if not self.classes:
            raise FileNotFoundError(f"DatasetFolder: no class folders in {self.root}")
        self.class_to_idx = {c: i for i, c in enumerate(self.classes)}
        self.samples = []
        for c in self.classes:
            for folder, _, files in sorted(os.walk(os.path.join(self.root, c), followlinks=True)):
                self.samples.extend((os.path.join(folder, f), self.class_to_idx[c]) for f in sorted(files)
                                    if valid(os.path.join(folder, f)))
        if not self.samples:
            raise FileNotFoundError(f"DatasetFolder: no valid files under {self.root}")
        self.loader, self.imgs = loader, self.samples
        self.targets = [t for _, t in self.samples]

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        path, target = self.samples[index]
        return self._apply(self.loader(path), target)


class ImageFolder(DatasetFolder):
    """DatasetFolder of images (IMG_EXTENSIONS), loaded as RGB PIL images."""

    def __init__(self, root, transform=None, target_transform=None, loader=default_loader, is_valid_file=None):
        super().__init__(root, loader, None if is_valid_file else IMG_EXTENSIONS, transform, target_transform,
                         is_valid_file)


class FakeData(VisionDataset):
    """`size` random RGB images of `image_size` (C, H, W) with random classes below
    `num_classes`, the same for the same index (seeded by `random_offset` + index)."""

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None, target_transform=None,
                 random_offset=0):
        super().__init__("", transform, target_transform)
        self.size, self.image_size, self.num_classes, self.random_offset = size, tuple(image_size), num_classes, random_offset

    def __len__(self):
        return self.size

    def __getitem__(self, index):
        if not 0 <= index < self.size:
            raise IndexError(f"FakeData: index {index} out of range for {self.size} images")
        rng = np.random.default_rng(index + self.random_offset)
        c, h, w = self.image_size
        pixels = rng.integers(0, 256, (h, w, c), dtype=np.uint8)
        image = _pil().fromarray(pixels[:, :, 0] if c == 1 else pixels)  # (uint8 2-D: mode L, 3-D: RGB)
        return self._apply(image, int(rng.integers(0, self.num_classes)))
