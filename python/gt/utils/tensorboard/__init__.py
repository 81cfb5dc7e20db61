"""gt.utils.tensorboard: torch.utils.tensorboard's SummaryWriter, for GT tensors.

    from gt.utils.tensorboard import SummaryWriter     # torch.utils.tensorboard under gt.as_torch
    writer = SummaryWriter(log_dir="runs/exp1")
    writer.add_scalar("Loss/train", loss, step)       # a 0-d tensor, a NumPy scalar or a number
    writer.flush()

It writes TensorBoard event files with the `tensorboard` package's own writer
(EventFileWriter) and protocol buffers, as PyTorch does, so `tensorboard --logdir runs` shows
them. Like PyTorch's, it needs that package: without it, importing this module raises
ImportError. Written: add_scalar (as simple_value, PyTorch's default), add_scalars (one run
folder per tag, as PyTorch's), add_histogram, add_image / add_images, add_text,
add_figure (matplotlib), add_hparams (the HParams tab: one run folder per call, as
PyTorch's), add_embedding (the Projector tab: tensors.tsv, metadata.tsv, sprite.png and
projector_config.pbtxt, PyTorch's layout), add_pr_curve (the PR Curves tab), add_audio (16-bit
WAV), add_custom_scalars (the Custom Scalars tab's layout), add_video (an animated GIF, written
with Pillow where PyTorch's needs moviepy) and add_mesh (the Mesh tab). add_graph records
nothing (GT traces no graph; it warns). Values are read with `.numpy()` / `.item()`, which wait
for them.
"""
import os
import socket
import time
import warnings
from datetime import datetime

import numpy as np

try:
    from tensorboard.compat.proto import event_pb2, summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
    from tensorboard.plugins.custom_scalar import layout_pb2 as _layout, metadata as _cs_meta
    from tensorboard.plugins.pr_curve import plugin_data_pb2 as _pr_data, metadata as _pr_meta
    from tensorboard.plugins.projector import projector_config_pb2 as _projector
    from tensorboard.plugins.hparams import api_pb2 as _hp_api, metadata as _hp_meta, plugin_data_pb2 as _hp_data
    from tensorboard.plugins.text import summary as _text
    from tensorboard.plugins.mesh import metadata as _mesh_meta, plugin_data_pb2 as _mesh_data
    from tensorboard.summary.writer.event_file_writer import EventFileWriter
except ImportError as e:  # the message PyTorch gives
    raise ImportError("TensorBoard logging requires TensorBoard version 1.15 or above "
                      f"(pip install tensorboard): {e}") from e

__all__ = ["SummaryWriter"]


def _numpy(value):
    """`value` (a gt Tensor, NumPy array, number or list) as a NumPy array."""
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.detach().numpy() if hasattr(value, "detach") else value.numpy()
    return np.asarray(value)


def _scalar(value):
    a = _numpy(value)
    if a.size != 1:
        raise ValueError(f"add_scalar: scalar_value must be a single number, got a value of shape {a.shape}")
    return float(a.reshape(()))


def _histogram(values, bins, max_bins):
    """A HistogramProto of `values`: NumPy's histogram with `bins` (a number, a NumPy method
    name, or a sequence of edges; 'tensorflow' means 30 equal bins here, where PyTorch uses
    TensorFlow's exponential buckets)."""
    a = _numpy(values).astype(np.float64).reshape(-1)
    if a.size == 0:
        raise ValueError("add_histogram: the input has no element")
    counts, edges = np.histogram(a, bins=30 if bins == "tensorflow" else bins)
    if max_bins is not None and len(counts) > max_bins:  # merge neighbours down to max_bins
        step = -(-len(counts) // max_bins)
        counts = np.add.reduceat(counts, np.arange(0, len(counts), step))
        edges = np.append(edges[::step], edges[-1])[:len(counts) + 1]
    return summary_pb2.HistogramProto(min=float(a.min()), max=float(a.max()), num=int(a.size), sum=float(a.sum()),
                                      sum_squares=float((a * a).sum()), bucket_limit=[float(x) for x in edges[1:]],
                                      bucket=[float(c) for c in counts])


def _png(image):
    """`image` (H, W, C) uint8 as a Summary.Image (PNG, Pillow)."""
    import io
    from PIL import Image
    h, w, c = image.shape
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[c]
    buf = io.BytesIO()
    Image.fromarray(image[:, :, 0] if c == 1 else image, mode).save(buf, format="PNG")
    return summary_pb2.Summary.Image(height=h, width=w, colorspace=c, encoded_image_string=buf.getvalue())


def _hwc_uint8(img, dataformats):
    """An image in `dataformats` (CHW, HWC, HW; float in [0, 1] or uint8) as (H, W, C) uint8, as
    PyTorch's writer makes it: floats times 255, clipped and truncated; one channel (or HW)
    repeated into RGB."""
    a = _numpy(img)
    fmt = dataformats.upper()
    if sorted(fmt) not in (sorted("CHW"), sorted("HW")) or a.ndim != len(fmt):
        raise ValueError(f"add_image: an image of shape {a.shape} does not match dataformats={dataformats!r}")
    if fmt == "HW":
        a, fmt = a[..., None], "HWC"
    a = np.transpose(a, [fmt.index(d) for d in "HWC"])
    if a.dtype != np.uint8:
        a = np.clip(a.astype(np.float32) * 255, 0, 255).astype(np.uint8)
    if a.shape[2] == 1:
        a = np.concatenate([a, a, a], 2)
    if a.shape[2] not in (1, 3, 4):
        raise ValueError(f"add_image: an image has 1, 3 or 4 channels, not {a.shape[2]}")
    return a


def _hparam_value(name, value):
    """(google.protobuf.Value, api_pb2.DataType) of one hyperparameter: a number (or a one-element
    tensor), a bool or a string; ValueError otherwise, as PyTorch."""
    from google.protobuf import struct_pb2
    if isinstance(value, bool):
        return struct_pb2.Value(bool_value=value), _hp_api.DATA_TYPE_BOOL
    if isinstance(value, str):
        return struct_pb2.Value(string_value=value), _hp_api.DATA_TYPE_STRING
    if isinstance(value, (int, float, np.integer, np.floating)) or hasattr(value, "numpy"):
        return struct_pb2.Value(number_value=_scalar(value)), _hp_api.DATA_TYPE_FLOAT64
    raise ValueError(f"add_hparams: the value of {name!r} should be one of int, float, str, bool, or a tensor, "
                     f"got {type(value).__name__}")


def _hparams_summary(tag, **plugin_data):
    """A Summary for the HParams plugin: HParamsPluginData(**plugin_data) under `tag`."""
    content = _hp_data.HParamsPluginData(version=_hp_meta.PLUGIN_DATA_VERSION, **plugin_data)
    value = summary_pb2.Summary.Value(tag=tag, metadata=_hp_meta.create_summary_metadata(content))
    return summary_pb2.Summary(value=[value])


class SummaryWriter:
    """Writes event files under `log_dir` (default runs/DATETIME_HOSTNAME + comment), as PyTorch's.
    `max_queue` events are buffered and written at least every `flush_secs` seconds, by flush()
    and by close() (also on `with ... as writer:` exit)."""

    def __init__(self, log_dir=None, comment="", purge_step=None, max_queue=10, flush_secs=120, filename_suffix=""):
        if not log_dir:
            log_dir = os.path.join("runs", datetime.now().strftime("%b%d_%H-%M-%S") + "_" + socket.gethostname() + comment)
        self.log_dir = str(log_dir)
        self.purge_step, self.max_queue, self.flush_secs, self.filename_suffix = purge_step, max_queue, flush_secs, filename_suffix
        self._writer = EventFileWriter(self.log_dir, max_queue, flush_secs, filename_suffix)
        self._children = {}  # add_scalars' run folders
        if purge_step is not None:  # TensorBoard drops what a crashed run logged from this step on
            self._writer.add_event(event_pb2.Event(step=purge_step, file_version="brain.Event:2",
                                                   session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START)))

    def get_logdir(self):
        return self.log_dir

    def _add(self, summary, global_step, walltime, writer=None):
        event = event_pb2.Event(summary=summary, wall_time=time.time() if walltime is None else walltime)
        if global_step is not None:
            event.step = int(_scalar(global_step))
        (writer or self._writer).add_event(event)

    def add_scalar(self, tag, scalar_value, global_step=None, walltime=None, new_style=False, double_precision=False):
        """One number under `tag` at `global_step`. Raises ValueError for a value of more than one element."""
        value = summary_pb2.Summary.Value(tag=tag, simple_value=_scalar(scalar_value))
        self._add(summary_pb2.Summary(value=[value]), global_step, walltime)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, walltime=None):
        """Several numbers shown on one chart: each key gets a run folder log_dir/main_tag_key."""
        for tag, value in tag_scalar_dict.items():
            folder = os.path.join(self.log_dir, (main_tag + "_" + tag).replace("/", "_"))
            if folder not in self._children:
                self._children[folder] = EventFileWriter(folder, self.max_queue, self.flush_secs, self.filename_suffix)
            v = summary_pb2.Summary.Value(tag=main_tag, simple_value=_scalar(value))
            self._add(summary_pb2.Summary(value=[v]), global_step, walltime, self._children[folder])

    def add_histogram(self, tag, values, global_step=None, bins="tensorflow", walltime=None, max_bins=None):
        """The distribution of `values` (any shape). See _histogram for `bins`."""
        v = summary_pb2.Summary.Value(tag=tag, histo=_histogram(values, bins, max_bins))
        self._add(summary_pb2.Summary(value=[v]), global_step, walltime)

    def add_image(self, tag, img_tensor, global_step=None, walltime=None, dataformats="CHW"):
        """One image: (C, H, W) by default (also HWC, HW), float in [0, 1] or uint8, as a PNG."""
        v = summary_pb2.Summary.Value(tag=tag, image=_png(_hwc_uint8(img_tensor, dataformats)))
        self._add(summary_pb2.Summary(value=[v]), global_step, walltime)

    def add_images(self, tag, img_tensor, global_step=None, walltime=None, dataformats="NCHW"):
        """A batch of images (N, C, H, W), tiled into one as gt.vision.utils.make_grid does."""
        from ...vision.utils import make_grid
        from ... import _tensor
        a = _numpy(img_tensor)
        if dataformats.upper() == "NHWC":
            a = np.transpose(a, (0, 3, 1, 2))
        elif dataformats.upper() != "NCHW":
            raise ValueError(f"add_images: dataformats must be 'NCHW' or 'NHWC', got {dataformats!r}")
        grid = make_grid(_tensor.tensor(a.astype(np.float32) / (255.0 if a.dtype == np.uint8 else 1.0)))
        self.add_image(tag, grid, global_step, walltime, "CHW")

    def add_figure(self, tag, figure, global_step=None, close=True, walltime=None):
        """A matplotlib figure (or a list of them, as add_images), rendered to an image."""
        figures = figure if isinstance(figure, list) else [figure]
        images = []
        for f in figures:
            f.canvas.draw()
            images.append(np.asarray(f.canvas.buffer_rgba())[:, :, :3].transpose(2, 0, 1))
            if close:
                import matplotlib.pyplot as plt
                plt.close(f)
        if isinstance(figure, list):
            self.add_images(tag, np.stack(images), global_step, walltime)
        else:
            self.add_image(tag, images[0], global_step, walltime)

    def add_text(self, tag, text_string, global_step=None, walltime=None):
        """Markdown text, shown in TensorBoard's Text tab."""
        self._add(_text.text_pb(tag + "/text_summary", text_string), global_step, walltime)

    def add_hparams(self, hparam_dict, metric_dict, hparam_domain_discrete=None, run_name=None, global_step=None):
        """One run of a hyperparameter search for TensorBoard's HParams tab: `hparam_dict` (name ->
        number, bool, string or one-element tensor) and `metric_dict` (metric tag -> number),
        written with PyTorch's layout to the run folder log_dir/run_name (default: the current
        time); `hparam_domain_discrete` gives a hyperparameter's possible values. TypeError for
        arguments that are not dicts, ValueError for other values."""
        if not isinstance(hparam_dict, dict) or not isinstance(metric_dict, dict):
            raise TypeError("hparam_dict and metric_dict should be dictionary.")
        hparam_domain_discrete = hparam_domain_discrete or {}
        if not isinstance(hparam_domain_discrete, dict):
            raise TypeError("hparam_domain_discrete should be a dictionary.")
        infos, values = [], {}
        for name, v in hparam_dict.items():
            values[name], dtype = _hparam_value(name, v)
            info = _hp_api.HParamInfo(name=name, type=dtype)
            if name in hparam_domain_discrete:
                domain = [_hparam_value(name, d)[0] for d in hparam_domain_discrete[name]]
                info.domain_discrete.values.extend(domain)
            infos.append(info)
        metrics = [_hp_api.MetricInfo(name=_hp_api.MetricName(tag=tag)) for tag in metric_dict]
        start = _hp_data.SessionStartInfo()
        for name, v in values.items():
            start.hparams[name].CopyFrom(v)
        run = SummaryWriter(log_dir=os.path.join(self.log_dir, run_name or str(time.time())))
        with run:
            run._add(_hparams_summary(_hp_meta.EXPERIMENT_TAG, experiment=_hp_api.Experiment(
                hparam_infos=infos, metric_infos=metrics)), None, None)
            run._add(_hparams_summary(_hp_meta.SESSION_START_INFO_TAG, session_start_info=start), None, None)
            run._add(_hparams_summary(_hp_meta.SESSION_END_INFO_TAG, session_end_info=_hp_data.SessionEndInfo(
                status=_hp_api.STATUS_SUCCESS)), None, None)
            for tag, v in metric_dict.items():
                run.add_scalar(tag, v, global_step)

    def add_embedding(self, mat, metadata=None, label_img=None, global_step=None, tag="default", metadata_header=None):
        """Points for TensorBoard's Projector tab: `mat` (N, D) one row per point; `metadata` N
        labels (or N rows of columns named by `metadata_header`); `label_img` (N, C, H, W)
        thumbnails, tiled into one sprite image. Written, as PyTorch does, to
        log_dir/STEP/TAG/{tensors.tsv, metadata.tsv, sprite.png} and listed in
        log_dir/projector_config.pbtxt. Raises ValueError for shapes that do not match."""
        from urllib.parse import quote
        from google.protobuf import text_format
        m = _numpy(mat)
        if m.ndim != 2:
            raise ValueError(f"add_embedding: mat must be 2-D (N, D), got shape {m.shape}")
        step = 0 if global_step is None else int(_scalar(global_step))
        subdir = f"{str(step).zfill(5)}/{quote(tag, safe='')}"
        folder = os.path.join(self.log_dir, subdir)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "tensors.tsv"), "w") as f:
            for row in m.astype(np.float64):
                f.write("\t".join(repr(float(x)) for x in row) + "\n")
        info = _projector.EmbeddingInfo(tensor_name=f"{tag}:{str(step).zfill(5)}", tensor_path=f"{subdir}/tensors.tsv")
        if metadata is not None:
            rows = [_numpy(x).tolist() if hasattr(x, "numpy") else x for x in metadata]
            if len(rows) != m.shape[0]:
                raise ValueError(f"add_embedding: {len(rows)} metadata rows for {m.shape[0]} points")
            with open(os.path.join(folder, "metadata.tsv"), "w") as f:
                if metadata_header is not None:
                    f.write("\t".join(str(h) for h in metadata_header) + "\n")
                for r in rows:
                    f.write(("\t".join(str(x) for x in r) if metadata_header is not None else str(r)) + "\n")
            info.metadata_path = f"{subdir}/metadata.tsv"
        if label_img is not None:
            imgs = _numpy(label_img)
            if imgs.ndim != 4 or imgs.shape[0] != m.shape[0]:
                raise ValueError(f"add_embedding: label_img must be (N, C, H, W) with N = {m.shape[0]}, got {imgs.shape}")
            n, c, h, w = imgs.shape
            side = int(np.ceil(np.sqrt(n)))
            sprite = np.zeros((c, side * h, side * w), dtype=imgs.dtype)
            for i in range(n):
                r, col = divmod(i, side)
                sprite[:, r * h:(r + 1) * h, col * w:(col + 1) * w] = imgs[i]
            from PIL import Image
            Image.fromarray(_hwc_uint8(sprite, "CHW")[:, :, 0] if c == 1 else _hwc_uint8(sprite, "CHW")).save(
                os.path.join(folder, "sprite.png"))
            info.sprite.image_path = f"{subdir}/sprite.png"
            info.sprite.single_image_dim.extend([w, h])
        config_path = os.path.join(self.log_dir, "projector_config.pbtxt")
        config = _projector.ProjectorConfig()
        if os.path.exists(config_path):  # earlier calls' embeddings stay listed
            with open(config_path) as f:
                text_format.Parse(f.read(), config)
        config.embeddings.extend([info])
        with open(config_path, "w") as f:
            f.write(text_format.MessageToString(config))

    def add_pr_curve(self, tag, labels, predictions, global_step=None, num_thresholds=127, weights=None, walltime=None):
        """A precision-recall curve for TensorBoard's PR Curves tab: `labels` (0 or 1, or bools)
        and `predictions` (probabilities in [0, 1]) of one shape, optional `weights`. At each of
        num_thresholds thresholds evenly spaced in [0, 1] it counts true and false positives and
        negatives (each prediction falls in the bucket floor(p * (num_thresholds - 1)); the
        counts at threshold i are those of buckets >= i), as the PR Curves plugin's own summary
        op, and stores them with precision and recall. Raises ValueError for mismatched shapes."""
        y, p = _numpy(labels).astype(np.float64).reshape(-1), _numpy(predictions).astype(np.float64).reshape(-1)
        if y.shape != p.shape:
            raise ValueError(f"add_pr_curve: labels ({y.size}) and predictions ({p.size}) differ in size")
        wt = np.ones_like(y) if weights is None else np.broadcast_to(_numpy(weights).astype(np.float64).reshape(-1), y.shape)
        n = min(int(num_thresholds), 127)
        bucket = np.clip(np.floor(np.clip(p, 0, 1) * (n - 1)).astype(np.int64), 0, n - 1)
        tp = np.cumsum(np.bincount(bucket, weights=y * wt, minlength=n)[::-1])[::-1]
        fp = np.cumsum(np.bincount(bucket, weights=(1 - y) * wt, minlength=n)[::-1])[::-1]
        tn, fn = fp[0] - fp, tp[0] - tp
        precision = tp / np.maximum(1e-7, tp + fp)
        recall = tp / np.maximum(1e-7, tp + fn)
        data = np.stack([tp, fp, tn, fn, precision, recall]).astype(np.float32)
        tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_FLOAT, float_val=data.reshape(-1).tolist(),
                                        tensor_shape=tensor_shape_pb2.TensorShapeProto(
                                            dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=s) for s in data.shape]))
        content = _pr_data.PrCurvePluginData(version=0, num_thresholds=n).SerializeToString()
        meta = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(
            plugin_name=_pr_meta.PLUGIN_NAME, content=content))
        v = summary_pb2.Summary.Value(tag=tag, metadata=meta, tensor=tensor)
        self._add(summary_pb2.Summary(value=[v]), global_step, walltime)

    def add_audio(self, tag, snd_tensor, global_step=None, sample_rate=44100, walltime=None):
        """A sound: `snd_tensor` (L,) or (1, L) samples in [-1, 1], stored as 16-bit mono WAV
        (Python's wave module). Raises ValueError for more than one channel."""
        import io
        import wave
        a = _numpy(snd_tensor).astype(np.float64)
        if a.ndim == 2 and a.shape[0] == 1:
            a = a[0]
        if a.ndim != 1:
            raise ValueError(f"add_audio: expected (L,) or (1, L) samples, got shape {a.shape}")
        pcm = (np.clip(a, -1, 1) * 32767).astype("<i2")
        buf = io.BytesIO()
        with wave.open(buf, "wb") as f:
            f.setnchannels(1)
            f.setsampwidth(2)
            f.setframerate(int(sample_rate))
            f.writeframes(pcm.tobytes())
        audio = summary_pb2.Summary.Audio(sample_rate=float(sample_rate), num_channels=1, length_frames=int(pcm.size),
                                          encoded_audio_string=buf.getvalue(), content_type="audio/wav")
        self._add(summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, audio=audio)]), global_step, walltime)

    def add_video(self, tag, vid_tensor, global_step=None, fps=4, walltime=None):
        """Videos (N, T, C, H, W), C of 1, 3 or 4, float in [0, 1] or uint8, as PyTorch's: the N
        videos tiled into one grid per frame (N padded with black videos to a power of two, 2^(k//2)
        rows for 2^k videos), stored as an animated GIF (Pillow) of `fps` frames per second in
        an image summary (TensorBoard's Images tab plays it). ValueError for another shape."""
        import io
        from PIL import Image
        v = _numpy(vid_tensor)
        if v.ndim != 5 or v.shape[2] not in (1, 3, 4):
            raise ValueError(f"add_video: expected (N, T, C, H, W) with C of 1, 3 or 4, got shape {v.shape}")
        v = v.astype(np.float32) / 255.0 if v.dtype == np.uint8 else v.astype(np.float32)
        n, t, c, h, w = v.shape
        padded = 1 << (n - 1).bit_length()  # the next power of two
        if padded != n:
            v = np.concatenate([v, np.zeros((padded - n, t, c, h, w), np.float32)])
        rows = 1 << ((padded.bit_length() - 1) // 2)
        cols = padded // rows
        grid = v.reshape(rows, cols, t, c, h, w).transpose(2, 0, 4, 1, 5, 3).reshape(t, rows * h, cols * w, c)
        frames = (np.clip(grid, 0, 1) * 255).astype(np.uint8)
        # (uint8 (H, W) is a grayscale image, (H, W, 3) RGB and (H, W, 4) RGBA; GIF keeps no alpha)
        images = [Image.fromarray(np.ascontiguousarray(f[..., 0] if c == 1 else f)).convert("L" if c == 1 else "RGB")
                  for f in frames]
        buf = io.BytesIO()
        images[0].save(buf, format="GIF", save_all=True, append_images=images[1:], duration=int(1000 / fps), loop=0)
        image = summary_pb2.Summary.Image(height=rows * h, width=cols * w, colorspace=c,
                                          encoded_image_string=buf.getvalue())
        self._add(summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, image=image)]), global_step, walltime)

    def add_mesh(self, tag, vertices, colors=None, faces=None, config_dict=None, global_step=None, walltime=None):
        """A point cloud or mesh for the Mesh tab (TensorBoard's mesh plugin), as PyTorch's:
        vertices (B, N, 3) float, colors (B, N, 3) uint8 in [0, 255], faces (B, F, 3) vertex
        indices; config_dict the three.js settings (camera, lights, material) as a dict. One
        tensor summary per part present (tags `tag + "_VERTEX"`, ...), each naming the parts."""
        import json
        parts = [(vertices, _mesh_data.MeshPluginData.VERTEX, np.float32, types_pb2.DT_FLOAT),
                 (faces, _mesh_data.MeshPluginData.FACE, np.int32, types_pb2.DT_INT32),
                 (colors, _mesh_data.MeshPluginData.COLOR, np.uint8, types_pb2.DT_UINT8)]
        parts = [(_numpy(a).astype(np_type), kind, dtype) for a, kind, np_type, dtype in parts if a is not None]
        for a, _, _ in parts:
            if a.ndim != 3 or a.shape[-1] != 3:
                raise ValueError(f"add_mesh: vertices, colors and faces must be (B, N, 3), got shape {a.shape}")
        components = _mesh_meta.get_components_bitmask([kind for _, kind, _ in parts])
        config = json.dumps(config_dict, sort_keys=True) if config_dict else "{}"
        values = []
        for a, kind, dtype in parts:
            meta = _mesh_meta.create_summary_metadata(tag, None, kind, components, list(a.shape), json_config=config)
            shape = tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=s) for s in a.shape])
            tensor = tensor_pb2.TensorProto(dtype=dtype, tensor_shape=shape, tensor_content=a.tobytes())
            values.append(summary_pb2.Summary.Value(tag=_mesh_meta.get_instance_name(tag, kind), tensor=tensor,
                                                    metadata=meta))
        self._add(summary_pb2.Summary(value=values), global_step, walltime)

    def add_custom_scalars(self, layout):
        """The Custom Scalars tab's layout: {category: {chart title: ["Multiline" or "Margin",
        [tags]]}} (Margin: [value, lower, upper] tags), as PyTorch's. Raises ValueError for
        another chart kind."""
        categories = []
        for title, charts in layout.items():
            out = []
            for chart_title, (kind, tags) in charts.items():
                if kind == "Multiline":
                    chart = _layout.Chart(title=chart_title, multiline=_layout.MultilineChartContent(tag=list(tags)))
                elif kind == "Margin":
                    if len(tags) != 3:
                        raise ValueError(f"add_custom_scalars: a Margin chart takes [value, lower, upper] tags, got {tags}")
                    series = _layout.MarginChartContent.Series(value=tags[0], lower=tags[1], upper=tags[2])
                    chart = _layout.Chart(title=chart_title, margin=_layout.MarginChartContent(series=[series]))
                else:
                    raise ValueError(f"add_custom_scalars: chart kind must be 'Multiline' or 'Margin', got {kind!r}")
                out.append(chart)
            categories.append(_layout.Category(title=title, chart=out))
        content = _layout.Layout(category=categories).SerializeToString()
        meta = summary_pb2.SummaryMetadata(plugin_data=summary_pb2.SummaryMetadata.PluginData(
            plugin_name=_cs_meta.PLUGIN_NAME, content=content))
        tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING, string_val=[content],
                                        tensor_shape=tensor_shape_pb2.TensorShapeProto())
        v = summary_pb2.Summary.Value(tag=_cs_meta.CONFIG_SUMMARY_TAG, tensor=tensor, metadata=meta)
        self._add(summary_pb2.Summary(value=[v]), None, None)

    def add_graph(self, model, input_to_model=None, verbose=False, use_strict_trace=True):
        """Records nothing: GT traces no graph of a module (warns)."""
        warnings.warn("SummaryWriter.add_graph: GT records no model graph; nothing was written", stacklevel=2)

    def flush(self):
        """Writes what is buffered to disk."""
        self._writer.flush()
        for w in self._children.values():
            w.flush()

    def close(self):
        """Flushes and closes the event files (a closed writer cannot be written to)."""
        self._writer.close()
        for w in self._children.values():
            w.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
