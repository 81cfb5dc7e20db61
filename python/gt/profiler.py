"""A timeline of what this client does, as a Chrome trace-event JSON file that Perfetto UI
(ui.perfetto.dev) and chrome://tracing open:

    with gt.profiler.trace("out.json"):
        train_step()

or `GT_TRACE=out.json python train.py` (the whole run, written at exit). The client's track has
one slice per op issued (its name, result shape and your source line) and one per sync (a
`.numpy()` / `.item()` / `gt.synchronize()` waiting for values, with the bytes fetched);
`gt trace summary out.json` (or `python -m gt trace summary out.json`) prints where the time went,
and `gt trace plot out.json -o timeline.png` draws it.

Not yet in the trace (the observability issue): the dispatcher's and the workers' tracks
(capture, passes, kernels, collectives) with their clocks aligned to the client's.

Format: the Trace Event Format's "X" (complete) events, timestamps and durations in
microseconds (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU).
Overhead when no trace is on: one check of a module global per op.
"""
import atexit
import collections
import contextlib
import getpass
import json
import os
import socket
import threading
import time

from . import _C
from . import _tensor

__all__ = ["trace", "summary", "plot"]


class _Recorder:
    """Events of one trace, kept as tuples until written (a dict per event would cost more)."""

    def __init__(self):
        self.ops = []    # (name, start_ns, end_ns, line, shape)
        self.syncs = []  # (start_ns, end_ns, line, bytes)
        self.pid = os.getpid()
        self.tid = threading.get_ident()

    def op(self, name, start_ns, result):
        """An op issued from start_ns until now: its name, result shape and the user's line."""
        self.ops.append((name, start_ns, time.perf_counter_ns(), _C.user_location(), result.shape))

    def sync(self, start_ns, nbytes):
        """A wait for values (a fetch of nbytes, or gt.synchronize) from start_ns until now."""
        self.syncs.append((start_ns, time.perf_counter_ns(), _C.user_location(), nbytes))

    def trace_events(self):
        def event(name, category, start, end, args):
            return {"name": name, "cat": category, "ph": "X", "ts": start / 1000, "dur": (end - start) / 1000,
                    "pid": self.pid, "tid": self.tid, "args": args}
        label = f"gt client {getpass.getuser()}@{socket.gethostname()}:{self.pid}"
        out = [{"name": "process_name", "ph": "M", "pid": self.pid, "args": {"name": label}}]
        out += [event(n, "op", s, e, {"line": line, "shape": list(shape)}) for n, s, e, line, shape in self.ops]
        out += [event("sync", "sync", s, e, {"line": line, "bytes": b}) for s, e, line, b in self.syncs]
        return out

    def write(self, path):
        tmp = f"{path}.part"
        with open(tmp, "w") as f:
            json.dump({"traceEvents": self.trace_events(), "displayTimeUnit": "ms"}, f)
        os.replace(tmp, path)


@contextlib.contextmanager
def trace(path):
    """Records this client's ops and syncs inside the `with` block and writes them to `path`
    (Chrome trace-event JSON) when it ends. Raises RuntimeError if a trace is already on."""
    if _tensor._trace is not None:
        raise RuntimeError("a gt.profiler trace is already on (one at a time)")
    recorder = _tensor._trace = _Recorder()
    try:
        yield recorder
    finally:
        _tensor._trace = None
        recorder.write(path)


def _trace_whole_run(path):
    """GT_TRACE=path: records from import to exit."""
    recorder = _tensor._trace = _Recorder()

    def finish():
        if _tensor._trace is recorder:
            _tensor._trace = None
        recorder.write(path)
    atexit.register(finish)


def summary(path, top=10):
    """The text `gt trace summary` prints: time per op kind (issue time on the client, in
    microseconds), the slowest syncs (milliseconds, bytes fetched) with their lines, and the share
    of the traced time spent waiting. Raises OSError for a missing file and ValueError
    (json.JSONDecodeError) for one that is not JSON."""
    with open(path) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    if not events:
        return f"{path}: no events"
    start = min(e["ts"] for e in events)
    end = max(e["ts"] + e["dur"] for e in events)
    ops = collections.defaultdict(lambda: [0, 0.0])
    for e in events:
        if e["cat"] == "op":
            ops[e["name"]][0] += 1
            ops[e["name"]][1] += e["dur"]
    syncs = sorted((e for e in events if e["cat"] == "sync"), key=lambda e: -e["dur"])
    waited = sum(e["dur"] for e in syncs)
    lines = [f"{path}: {len(events)} events over {(end - start) / 1e3:.1f} ms; "
             f"{waited / 1e3:.1f} ms ({100 * waited / max(end - start, 1e-9):.0f}%) waiting in {len(syncs)} syncs",
             "", f"{'op':24s} {'count':>8s} {'issue us total':>15s} {'us each':>9s}"]
    for name, (count, total) in sorted(ops.items(), key=lambda kv: -kv[1][1])[:top]:
        lines.append(f"{name:24s} {count:8d} {total:15.1f} {total / count:9.2f}")
    if syncs:
        lines += ["", f"{'slowest syncs':40s} {'ms':>9s} {'bytes':>10s}"]
        for e in syncs[:top]:
            lines.append(f"{e['args'].get('line', '?'):40s} {e['dur'] / 1e3:9.3f} {e['args'].get('bytes', 0):10d}")
    return "\n".join(lines)


def plot(path, out, width=14.0):
    """Draws the trace at `path` as a timeline picture `out` (PNG, SVG or PDF by its suffix;
    matplotlib): one row per process and category (ops, syncs), milliseconds from the first event
    on the x axis, each slice a bar. Returns the number of slices drawn. Raises ImportError
    without matplotlib and ValueError for a trace without slices."""
    try:
        import matplotlib
    except ImportError as e:
        raise ImportError("gt trace plot needs matplotlib (pip install matplotlib; scripts/install-deps.sh has it)") from e
    matplotlib.use("Agg")  # no display needed
    import matplotlib.pyplot as plt

    with open(path) as f:
        doc = json.load(f)["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in doc if e.get("ph") == "M" and e.get("name") == "process_name"}
    slices = [e for e in doc if e.get("ph") == "X"]
    if not slices:
        raise ValueError(f"{path}: no events to plot")
    t0 = min(e["ts"] for e in slices)
    rows = sorted({(e["pid"], e["cat"]) for e in slices})
    fig, ax = plt.subplots(figsize=(width, 1.0 + 0.6 * len(rows)))
    colors = {"op": "tab:blue", "sync": "tab:red"}
    for y, (pid, category) in enumerate(rows):
        bars = [((e["ts"] - t0) / 1e3, max(e["dur"] / 1e3, 1e-3)) for e in slices
                if e["pid"] == pid and e["cat"] == category]
        ax.broken_barh(bars, (y - 0.4, 0.8), facecolors=colors.get(category, "tab:gray"))
    ax.set_yticks(range(len(rows)), [f"{names.get(pid, pid)}: {category}" for pid, category in rows])
    ax.set_xlabel("ms since the first event")
    ax.set_title(os.path.basename(path))
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return len(slices)

