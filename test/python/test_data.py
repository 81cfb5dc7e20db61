"""gt.utils.data: datasets, samplers, collation and the DataLoader, as torch.utils.data."""
import os
from collections import OrderedDict, namedtuple

import numpy as np
import pytest

import gt
from gt.utils.data import (BatchSampler, ConcatDataset, DataLoader, Dataset, IterableDataset, RandomSampler,
                           SequentialSampler, Subset, TensorDataset, default_collate, random_split)
from conftest import check

X = np.arange(30, dtype=np.float32).reshape(10, 3)
Y = np.arange(10, dtype=np.int64) * 7


def tensor_dataset():
    return TensorDataset(gt.tensor(X), gt.tensor(Y))


def rows_of(batches):
    """The row numbers a list of (x, y) batches holds, in order (each row of X starts at 3 * i)."""
    out = []
    for xb, yb in batches:
        xs, ys = xb.numpy(), yb.numpy()
        assert (xs[:, 0] // 3 * 7 == ys).all(), (xs, ys)  # x and y of one sample stay together
        out += (xs[:, 0] // 3).astype(int).tolist()
    return out


@pytest.mark.parametrize("batch_size,drop_last,sizes", [(4, False, [4, 4, 2]), (4, True, [4, 4]), (10, False, [10]),
                                                         (3, True, [3, 3, 3])])
def test_batches_in_order(batch_size, drop_last, sizes):
    loader = DataLoader(tensor_dataset(), batch_size=batch_size, drop_last=drop_last)
    batches = list(loader)
    assert len(loader) == len(sizes) and [len(xb) for xb, _ in batches] == sizes
    assert rows_of(batches) == list(range(sum(sizes)))
    assert batches[0][0].dtype == gt.float32 and batches[0][1].dtype == gt.int64
    check(batches[-1][0], X[sum(sizes[:-1]):sum(sizes)])


def test_shuffle_draws_a_new_order_each_epoch_reproducibly():
    def epochs(generator):
        loader = DataLoader(tensor_dataset(), batch_size=3, shuffle=True, generator=generator)
        return [rows_of(loader) for _ in range(3)]
    a = epochs(gt.Generator().manual_seed(5))
    assert a == epochs(gt.Generator().manual_seed(5))  # the same seed, the same orders
    assert a != epochs(gt.Generator().manual_seed(6))
    assert all(sorted(e) == list(range(10)) for e in a)  # every sample once per epoch
    assert len({tuple(e) for e in a}) == 3  # a new order each epoch
    gt.manual_seed(1)  # without a generator: gt.manual_seed's stream
    b = epochs(None)
    gt.manual_seed(1)
    assert epochs(None) == b


def ops_of(fn):
    """The ops (not frees) fn() issues, from the client's tape (its last 10000 instructions)."""
    tape = gt.debug.get_tape()
    last = tape[-1]["time"] if tape else -1.0
    fn()
    return [e["op"] for e in gt.debug.get_tape() if e["time"] > last and e["op"] != "free"]


def test_a_tensor_dataset_batch_is_one_indexing_op_per_tensor():
    loader = DataLoader(tensor_dataset(), batch_size=5, shuffle=True, generator=gt.Generator().manual_seed(0))
    it = iter(loader)
    ops = ops_of(lambda: next(it))
    # The indices are uploaded once and gathered from each tensor: no per-sample op, no stack.
    assert ops == ["upload", "index_select", "index_select"], ops
    it = iter(DataLoader(tensor_dataset(), batch_size=5))
    ops = ops_of(lambda: next(it))
    assert ops == ["slice", "slice"], ops  # consecutive indices: a slice of each tensor
    with pytest.raises(IndexError, match="index 10 is out of range for a dataset of 10 samples"):
        next(iter(DataLoader(tensor_dataset(), sampler=[3, 10], batch_size=2)))
    xb, _ = next(iter(DataLoader(tensor_dataset(), sampler=[-1, 0], batch_size=2)))
    check(xb, X[[9, 0]])


class Squares(Dataset):
    """Samples of Python numbers, NumPy arrays and dicts, for default_collate."""

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return {"x": np.full((2,), i, dtype=np.float32), "i": i, "f": i / 2, "ok": i % 2 == 0, "name": f"s{i}"}


def test_default_collate_of_numbers_arrays_and_dicts():
    batch = next(iter(DataLoader(Squares(), batch_size=4)))
    assert batch["x"].shape == (4, 2) and batch["x"].dtype == gt.float32
    check(batch["x"], [[0, 0], [1, 1], [2, 2], [3, 3]])
    assert batch["i"].dtype == gt.int64 and batch["i"].numpy().tolist() == [0, 1, 2, 3]
    assert batch["f"].dtype == gt.float64  # Python floats: float64, as PyTorch
    assert batch["ok"].dtype == gt.bool and batch["ok"].numpy().tolist() == [True, False, True, False]
    assert batch["name"] == ["s0", "s1", "s2", "s3"]
    Point = namedtuple("Point", "x y")
    p = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(p, Point) and p.x.numpy().tolist() == [1, 3]
    pair = default_collate([(gt.ones(2), 1), (gt.zeros(2), 0)])  # gt Tensors are stacked
    check(pair[0], [[1, 1], [0, 0]])
    assert isinstance(pair, list)  # (tuples give a list, as PyTorch's: batch[0] = batch[0].cuda())
    it = iter(DataLoader(TensorDataset(gt.ones(3, 2), gt.zeros(3)), batch_size=2))
    batch = next(it)
    assert isinstance(batch, list) and len(batch) == 2
    assert type(it).__name__ == "_SingleProcessDataLoaderIter" and len(it) == 2
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([np.zeros(2), np.zeros(3)])
    with pytest.raises(TypeError, match="found <class 'object'>"):
        default_collate([object()])


def test_collate_registry_and_mapping_types():
    """torch.utils.data._utils.collate: `collate` with a map of type -> function (MONAI registers
    its MetaTensor's), mappings keep their type (an OrderedDict stays one)."""
    from gt.utils.data._utils.collate import collate, default_collate_fn_map

    class Box:
        def __init__(self, v):
            self.v = v

    def collate_box(batch, *, collate_fn_map=None):
        return gt.tensor([b.v for b in batch]) * 10

    fns = {**default_collate_fn_map, Box: collate_box}
    out = collate([{"b": Box(1), "n": 1.5}, {"b": Box(2), "n": 2.5}], collate_fn_map=fns)
    assert out["b"].numpy().tolist() == [10, 20] and out["n"].dtype == gt.float64
    with pytest.raises(TypeError, match="found <class .*Box'>"):
        default_collate([Box(1)])  # (not in the default map)
    od = default_collate([OrderedDict(x=np.float32(1)), OrderedDict(x=np.float32(2))])
    assert type(od) is OrderedDict and od["x"].dtype == gt.float32
    assert [t.numpy().tolist() for t in default_collate([[1, 2], [3, 4]])] == [[1, 3], [2, 4]]
    with pytest.raises(TypeError, match="<U1"):
        default_collate([np.array(["a"]), np.array(["b"])])

    class Sub(gt.Tensor):
        pass
    assert type(default_collate([gt.ones(2).as_subclass(Sub)] * 3)) is Sub  # (through gt.stack's dispatch)


def test_collate_fn_sampler_and_batch_sampler():
    loader = DataLoader(Squares(), batch_size=2, collate_fn=lambda samples: [s["i"] for s in samples])
    assert list(loader) == [[0, 1], [2, 3], [4, 5]]
    loader = DataLoader(Squares(), batch_size=None)  # no batching: samples as they are
    assert [s["i"] for s in loader] == list(range(6))
    loader = DataLoader(Squares(), batch_sampler=[[5, 0], [3]], collate_fn=lambda s: [x["i"] for x in s])
    assert list(loader) == [[5, 0], [3]]
    loader = DataLoader(Squares(), sampler=[4, 2, 0], batch_size=2, collate_fn=lambda s: [x["i"] for x in s])
    assert list(loader) == [[4, 2], [0]] and len(loader) == 2
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(Squares(), sampler=[0], shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(Squares(), batch_sampler=[[0]], batch_size=2)
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        DataLoader(Squares(), batch_size=0)
    assert list(BatchSampler(SequentialSampler(range(5)), 2, drop_last=True)) == [[0, 1], [2, 3]]
    assert sorted(RandomSampler(range(7), generator=gt.Generator().manual_seed(0))) == list(range(7))
    assert len(list(RandomSampler(range(3), replacement=True, num_samples=8))) == 8


class Counter(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))


def test_iterable_datasets_are_batched_in_order():
    assert [b.numpy().tolist() for b in DataLoader(Counter(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5], [6]]
    assert len(list(DataLoader(Counter(7), batch_size=3, drop_last=True))) == 2
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Counter(3), shuffle=True)
    with pytest.raises(TypeError):
        len(DataLoader(Counter(3), batch_size=2))  # the stream has no length, as in PyTorch


def test_random_split_and_subsets():
    ds = tensor_dataset()
    parts = random_split(ds, [6, 4], generator=gt.Generator().manual_seed(0))
    assert [len(p) for p in parts] == [6, 4] and all(isinstance(p, Subset) for p in parts)
    seen = sorted(parts[0].indices + parts[1].indices)
    assert seen == list(range(10))
    again = random_split(ds, [6, 4], generator=gt.Generator().manual_seed(0))
    assert again[0].indices == parts[0].indices
    assert [len(p) for p in random_split(ds, [0.5, 0.3, 0.2])] == [5, 3, 2]
    assert [len(p) for p in random_split(range(11), [0.5, 0.5])] == [6, 5]  # the remainder goes first
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(ds, [3, 3])
    # A loader over a Subset of a TensorDataset batches the subset's own samples.
    batches = list(DataLoader(parts[1], batch_size=3))
    assert rows_of(batches) == parts[1].indices
    inner = Subset(Subset(ds, [9, 8, 7, 6]), [3, 1])  # nested subsets map through each
    assert rows_of(DataLoader(inner, batch_size=2)) == [6, 8]
    both = ConcatDataset([Subset(ds, [1, 2]), Subset(ds, [5])])
    assert len(both) == 3 and int(both[2][1].item()) == 35 and int(both[-3][1].item()) == 7
    with pytest.raises(IndexError):
        both[3]


def test_tensor_dataset_checks_sizes_and_takes_numpy_arrays():
    with pytest.raises(ValueError, match="Size mismatch"):
        TensorDataset(gt.zeros(3, 2), gt.zeros(4))
    xb, yb = next(iter(DataLoader(TensorDataset(X, Y), batch_size=4, shuffle=True)))
    assert isinstance(xb, gt.Tensor) and xb.shape == (4, 3) and yb.dtype == gt.int64
    assert (xb.numpy()[:, 0] // 3 * 7 == yb.numpy()).all()


def test_randperm():
    p = gt.randperm(50, generator=gt.Generator().manual_seed(3))
    assert p.dtype == gt.int64 and sorted(p.numpy().tolist()) == list(range(50))
    assert p.numpy().tolist() == gt.randperm(50, generator=gt.Generator().manual_seed(3)).numpy().tolist()
    g = gt.Generator()
    assert g.initial_seed() == 67280421310721 and g.manual_seed(7) is g and g.initial_seed() == 7


def test_random_sampler_draws_as_it_goes_and_the_submodules_torch_has():
    # minGPT's trainer samples with replacement, num_samples=1e10: drawn lazily, not all at once.
    from gt.utils.data.dataloader import DataLoader as DL
    from gt.utils.data.dataset import Dataset as DS, TensorDataset as TD
    from gt.utils.data.sampler import RandomSampler as RS, SequentialSampler as SS
    from gt.utils.data import DataLoader, Dataset, TensorDataset, RandomSampler, SequentialSampler
    assert (DL, DS, TD, RS, SS) == (DataLoader, Dataset, TensorDataset, RandomSampler, SequentialSampler)
    gt.manual_seed(0)
    endless = RandomSampler(range(7), replacement=True, num_samples=int(1e10))
    assert len(endless) == int(1e10)
    it = iter(endless)
    first = [next(it) for _ in range(3000)]  # three chunks
    assert all(0 <= i < 7 for i in first) and len(set(first)) == 7
    epochs = list(RandomSampler(range(5), num_samples=12))  # without replacement: permutations
    assert len(epochs) == 12 and sorted(epochs[:5]) == list(range(5)) and sorted(epochs[5:10]) == list(range(5))
    loader = DataLoader(TensorDataset(gt.arange(10)), batch_size=4,
                        sampler=RandomSampler(range(10), replacement=True, num_samples=int(1e9)))
    batch = next(iter(loader))[0]
    assert batch.shape == (4,) and all(0 <= int(v) < 10 for v in batch.numpy())


def test_distributed_sampler_splits_pads_and_reshuffles_by_epoch():
    from gt.utils.data.distributed import DistributedSampler
    ds = list(range(10))
    whole = DistributedSampler(ds, shuffle=False)  # GT is one process: rank 0 of 1 by default
    assert list(whole) == list(range(10)) and len(whole) == 10
    parts = [list(DistributedSampler(ds, num_replicas=3, rank=r, shuffle=False)) for r in range(3)]
    assert parts == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]  # padded from the start to 12
    cut = [list(DistributedSampler(ds, num_replicas=3, rank=r, shuffle=False, drop_last=True)) for r in range(3)]
    assert cut == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    s = DistributedSampler(ds, num_replicas=2, rank=0, seed=5)
    first = list(s)
    assert list(s) == first and len(first) == 5  # the same epoch, the same order
    s.set_epoch(1)
    assert list(s) != first
    both = list(DistributedSampler(ds, num_replicas=2, rank=0, seed=5)) + list(DistributedSampler(ds, num_replicas=2, rank=1, seed=5))
    assert sorted(both) == ds
    with pytest.raises(ValueError, match="Invalid rank 2"):
        DistributedSampler(ds, num_replicas=2, rank=2)


def test_multiprocessing_spawn_runs_each_child_as_its_own_client(tmp_path, monkeypatch):
    import gt.multiprocessing as mp
    scripts = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts")
    monkeypatch.syspath_prepend(scripts)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([scripts, os.environ.get("PYTHONPATH", "")]))
    import spawned
    mp.spawn(spawned.write_sum, args=(str(tmp_path / "out"),), nprocs=2)
    assert [float(open(tmp_path / f"out.{i}").read()) for i in range(2)] == [6.0, 12.0]
    with pytest.raises(mp.ProcessRaisedException, match="child 1 failed on purpose"):
        mp.spawn(spawned.fail_on_one, nprocs=2)
    assert mp.Queue is not None and callable(mp.get_context)
    names = {}
    exec("from gt.multiprocessing import *", names)  # every name __all__ lists exists
    assert callable(names["spawn"]) and callable(names["Process"])
    t = gt.ones(2)
    with pytest.warns(UserWarning, match="share no tensor memory"):
        assert t.share_memory_() is t and not t.is_shared()
    m = gt.nn.Linear(2, 2)
    with pytest.warns(UserWarning, match="trains a copy of its own"):
        assert m.share_memory() is m


def test_summary_writer_writes_event_files_tensorboard_reads(tmp_path):
    pytest.importorskip("tensorboard")  # (make's install-deps installs it; PyTorch's needs it too)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from gt.utils.tensorboard import SummaryWriter
    with SummaryWriter(log_dir=str(tmp_path / "run")) as w:
        assert w.get_logdir() == str(tmp_path / "run")
        for step in range(3):
            w.add_scalar("Loss/train", gt.tensor(2.0 - step), step)  # a 0-d tensor
            w.add_scalars("lr", {"a": 0.1 * step, "b": np.float32(0.5)}, step)
        w.add_histogram("weights", gt.arange(100, dtype=gt.float32), 0)
        w.add_image("digit", gt.ones(1, 4, 5) * 0.5, 0)
        w.add_images("batch", np.zeros((3, 3, 4, 4), np.float32), 0)
        w.add_text("notes", "hello", 0)
        with pytest.raises(ValueError, match="single number"):
            w.add_scalar("bad", gt.ones(2), 0)
        with pytest.warns(UserWarning, match="no model graph"):
            w.add_graph(gt.nn.Linear(2, 2))
    acc = EventAccumulator(str(tmp_path / "run"), size_guidance={"tensors": 0}).Reload()
    assert [(e.step, e.value) for e in acc.Scalars("Loss/train")] == [(0, 2.0), (1, 1.0), (2, 0.0)]
    h = acc.Histograms("weights")[0].histogram_value
    assert h.num == 100 and h.min == 0 and h.max == 99 and sum(h.bucket) == 100
    img = acc.Images("digit")[0]
    assert (img.height, img.width) == (4, 5)
    import io
    from PIL import Image
    pixels = np.asarray(Image.open(io.BytesIO(img.encoded_image_string)))
    assert pixels.shape == (4, 5, 3) and (pixels == 127).all()  # as PyTorch's: RGB, 0.5 * 255 truncated
    assert acc.Images("batch")[0].width > 4  # tiled
    assert "notes/text_summary" in acc.Tags()["tensors"]
    a = EventAccumulator(str(tmp_path / "run" / "lr_a")).Reload()
    assert [round(e.value, 6) for e in a.Scalars("lr")] == [0.0, 0.1, 0.2]


def test_add_hparams_writes_a_run_the_hparams_tab_reads(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import metadata
    from gt.utils.tensorboard import SummaryWriter
    with SummaryWriter(log_dir=str(tmp_path / "search")) as w:
        w.add_hparams({"lr": 0.01, "batch": gt.tensor(64), "optim": "adam", "nesterov": True},
                      {"hparam/accuracy": gt.tensor(0.91), "hparam/loss": 0.3},
                      hparam_domain_discrete={"optim": ["adam", "sgd"]}, run_name="trial1")
        with pytest.raises(TypeError, match="should be dictionary"):
            w.add_hparams([("lr", 0.1)], {})
        with pytest.raises(ValueError, match="'bad' should be one of"):
            w.add_hparams({"bad": [1, 2]}, {})
    acc = EventAccumulator(str(tmp_path / "search" / "trial1"), size_guidance={"tensors": 0}).Reload()
    content = acc.PluginTagToContent(metadata.PLUGIN_NAME)
    experiment = metadata.parse_experiment_plugin_data(content[metadata.EXPERIMENT_TAG])
    assert [i.name for i in experiment.hparam_infos] == ["lr", "batch", "optim", "nesterov"]
    assert [v.string_value for v in experiment.hparam_infos[2].domain_discrete.values] == ["adam", "sgd"]
    assert [m.name.tag for m in experiment.metric_infos] == ["hparam/accuracy", "hparam/loss"]
    start = metadata.parse_session_start_info_plugin_data(content[metadata.SESSION_START_INFO_TAG])
    assert start.hparams["lr"].number_value == 0.01 and start.hparams["batch"].number_value == 64
    assert start.hparams["optim"].string_value == "adam" and start.hparams["nesterov"].bool_value is True
    end = metadata.parse_session_end_info_plugin_data(content[metadata.SESSION_END_INFO_TAG])
    assert end.status == 1  # STATUS_SUCCESS
    assert [round(e.value, 6) for e in acc.Scalars("hparam/accuracy")] == [0.91]


def test_add_embedding_writes_what_the_projector_reads(tmp_path):
    pytest.importorskip("tensorboard")
    from google.protobuf import text_format
    from tensorboard.plugins.projector import projector_config_pb2
    from gt.utils.tensorboard import SummaryWriter
    points = np.arange(12, dtype=np.float32).reshape(4, 3) / 4
    with SummaryWriter(log_dir=str(tmp_path / "run")) as w:
        w.add_embedding(gt.tensor(points), metadata=["a", "b", "c", "d"], label_img=gt.ones(4, 1, 2, 3),
                        global_step=7, tag="features")
        w.add_embedding(points[:2], metadata=[[1, "x"], [2, "y"]], metadata_header=["id", "name"], tag="more")
        with pytest.raises(ValueError, match="3 metadata rows for 4 points"):
            w.add_embedding(points, metadata=["a", "b", "c"])
    folder = tmp_path / "run" / "00007" / "features"
    rows = [[float(x) for x in line.split("\t")] for line in (folder / "tensors.tsv").read_text().splitlines()]
    np.testing.assert_array_equal(np.array(rows, dtype=np.float32), points)
    assert (folder / "metadata.tsv").read_text().splitlines() == ["a", "b", "c", "d"]
    from PIL import Image
    assert Image.open(folder / "sprite.png").size == (6, 4)  # 2 x 2 thumbnails of 3 x 2
    config = text_format.Parse((tmp_path / "run" / "projector_config.pbtxt").read_text(),
                               projector_config_pb2.ProjectorConfig())
    first, second = config.embeddings
    assert (first.tensor_name, first.tensor_path, first.metadata_path) == (
        "features:00007", "00007/features/tensors.tsv", "00007/features/metadata.tsv")
    assert list(first.sprite.single_image_dim) == [3, 2] and second.tensor_name == "more:00000"
    assert (tmp_path / "run" / "00000" / "more" / "metadata.tsv").read_text().splitlines() == ["id\tname", "1\tx", "2\ty"]


def test_add_pr_curve_audio_and_custom_scalars(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util
    from gt.utils.tensorboard import SummaryWriter
    labels = np.array([1, 0, 1, 1, 0, 0, 1, 0])
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1])
    with SummaryWriter(log_dir=str(tmp_path / "run")) as w:
        w.add_pr_curve("pr", gt.tensor(labels), gt.tensor(scores), global_step=3, num_thresholds=11)
        w.add_audio("beep", gt.tensor(np.sin(np.linspace(0, 100, 800))), sample_rate=8000)
        w.add_custom_scalars({"losses": {"both": ["Multiline", ["loss/train", "loss/val"]],
                                         "band": ["Margin", ["m", "lo", "hi"]]}})
        with pytest.raises(ValueError, match="'Multiline' or 'Margin'"):
            w.add_custom_scalars({"c": {"t": ["Pie", ["a"]]}})
        # 3 videos of 2 frames (C=3, 4x5): padded to 4, a 2 x 2 grid of 8 x 10 per frame
        video = np.zeros((3, 2, 3, 4, 5), np.float32)
        video[1, 1, 0] = 1.0  # video 1, frame 1: red
        w.add_video("v", gt.tensor(video), global_step=2, fps=5)
        with pytest.raises(ValueError, match="N, T, C, H, W"):
            w.add_video("bad", gt.zeros(2, 3, 4, 4))
        vertices = np.array([[[0, 0, 0], [1, 0, 0], [0, 1, 0]]], np.float32)
        w.add_mesh("tri", gt.tensor(vertices), colors=gt.tensor(np.full((1, 3, 3), 200)),
                   faces=gt.tensor(np.array([[[0, 1, 2]]])), config_dict={"camera": {"cls": "PerspectiveCamera"}})
        with pytest.raises(ValueError, match="B, N, 3"):
            w.add_mesh("bad", gt.ones(3, 3))
    acc = EventAccumulator(str(tmp_path / "run"), size_guidance={"tensors": 0, "audio": 0}).Reload()
    (event,) = acc.Tensors("pr")
    curve = tensor_util.make_ndarray(event.tensor_proto)
    assert event.step == 3 and curve.shape == (6, 11)
    tp, fp, tn, fn, precision, recall = curve
    for i, threshold in enumerate(np.linspace(0, 1, 11)):  # predictions at or above bucket i's threshold
        bucket = np.floor(scores * 10).astype(int)
        positive = bucket >= i
        assert (tp[i], fp[i]) == ((positive & (labels == 1)).sum(), (positive & (labels == 0)).sum())
        assert (tn[i], fn[i]) == ((~positive & (labels == 0)).sum(), (~positive & (labels == 1)).sum())
    np.testing.assert_allclose(recall[0], 1.0) and np.testing.assert_allclose(precision[0], 0.5)
    (audio,) = acc.Audio("beep")
    assert audio.sample_rate == 8000 and audio.length_frames == 800 and audio.encoded_audio_string[:4] == b"RIFF"
    assert "custom_scalars__config__" in acc.Tags()["tensors"]
    import io
    from PIL import Image, ImageSequence
    (image,) = acc.Images("v")
    assert (image.step, image.height, image.width) == (2, 8, 10)
    gif = Image.open(io.BytesIO(image.encoded_image_string))
    frames = [np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(gif)]
    assert gif.format == "GIF" and len(frames) == 2 and gif.info["duration"] == 200
    assert frames[0].max() == 0 and (frames[1][:4, 5:] == [255, 0, 0]).all() and frames[1][:4, :5].max() == 0
    from tensorboard.plugins.mesh import plugin_data_pb2
    parts = {}
    for name in ("tri_VERTEX", "tri_FACE", "tri_COLOR"):
        (event,) = acc.Tensors(name)
        parts[name] = tensor_util.make_ndarray(event.tensor_proto)
        data = plugin_data_pb2.MeshPluginData.FromString(acc.SummaryMetadata(name).plugin_data.content)
        kinds = plugin_data_pb2.MeshPluginData
        assert data.name == "tri" and '"camera"' in data.json_config
        assert data.components == (1 << kinds.VERTEX) | (1 << kinds.FACE) | (1 << kinds.COLOR)  # every part present
    np.testing.assert_array_equal(parts["tri_VERTEX"], vertices)
    assert parts["tri_FACE"].tolist() == [[[0, 1, 2]]] and parts["tri_COLOR"].dtype == np.uint8


def test_chain_and_stack_datasets_and_strings_in_tuples():
    from gt.utils.data import ChainDataset, IterableDataset, StackDataset

    class Count(IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

        def __len__(self):
            return self.n
    chain = ChainDataset([Count(2), Count(3)])
    assert list(chain) == [0, 1, 0, 1, 2] and len(chain) == 5
    a, b = TensorDataset(gt.arange(3)), ["x", "y", "z"]
    assert StackDataset(a, b)[1][1] == "y" and StackDataset(num=a, name=b)[2]["name"] == "z"
    assert len(StackDataset(a, b)) == 3
    with pytest.raises(ValueError, match="Size mismatch"):
        StackDataset(a, ["x"])
    # strings within a sample's tuple come out as a tuple (zip's), at the top as a list: PyTorch's
    batch = default_collate([{"c": (2.5, "s")}, {"c": (3.5, "t")}])
    assert batch["c"][1] == ("s", "t")
    assert default_collate(["s", "t"]) == ["s", "t"]
    names = [n for _, n in DataLoader([(gt.zeros(1), f"x{i}") for i in range(3)], batch_size=3)]
    assert names == [("x0", "x1", "x2")]
