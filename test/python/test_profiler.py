"""gt.profiler: the client's timeline as Chrome trace-event JSON, and `gt trace summary`."""
import json
import os
import subprocess
import sys

import pytest

import gt
from gt import _tensor

HERE = os.path.basename(__file__)


def events(path):
    with open(path) as f:
        doc = json.load(f)
    return [e for e in doc["traceEvents"] if e["ph"] == "X"], [e for e in doc["traceEvents"] if e["ph"] == "M"]


def test_a_trace_has_each_op_and_sync_with_the_users_line(tmp_path):
    path = tmp_path / "out.json"
    x = gt.ones(4, 3)
    with gt.profiler.trace(str(path)):
        y = (x * 2.0).exp().sum(dim=1) + gt.tensor([1.0, 2.0, 3.0, 4.0])
        values = y.numpy()
    assert values.shape == (4,)
    slices, meta = events(path)
    ops = [e for e in slices if e["cat"] == "op"]
    assert [e["name"] for e in ops if e["name"] in ("mul", "exp", "sum")] == ["mul", "exp", "sum"]
    assert all(e["args"]["line"].startswith(f"{os.path.abspath(__file__)}:") for e in ops)
    assert next(e for e in ops if e["name"] == "sum")["args"]["shape"] == [4]
    assert next(e for e in ops if e["name"] == "upload")["args"]["shape"] == [4]  # gt.tensor's data
    (sync,) = [e for e in slices if e["cat"] == "sync"]
    assert sync["args"]["bytes"] == 16 and sync["dur"] >= 0
    assert all(e["ts"] >= ops[0]["ts"] for e in slices)  # one clock, in microseconds
    assert meta[0]["name"] == "process_name" and meta[0]["args"]["name"].startswith("gt client ")
    assert _tensor._trace is None  # off again after the block: nothing is recorded
    (x + 1).numpy()
    assert len(events(path)[0]) == len(slices)


def test_one_trace_at_a_time(tmp_path):
    with gt.profiler.trace(str(tmp_path / "a.json")):
        with pytest.raises(RuntimeError, match="already on"):
            with gt.profiler.trace(str(tmp_path / "b.json")):
                pass
    assert (tmp_path / "a.json").exists() and not (tmp_path / "b.json").exists()


def test_gt_trace_records_a_whole_run_and_gt_trace_summary_reads_it(tmp_path):
    path = tmp_path / "run.json"
    script = "import gt\nx = gt.ones(8)\nfor _ in range(3):\n    x = x * 2.0\nprint(x.sum().item())\n"
    p = subprocess.run([sys.executable, "-c", script], env=dict(os.environ, GT_TRACE=str(path)),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    slices, _ = events(path)
    assert sum(e["name"] == "mul" for e in slices) == 3
    s = subprocess.run([sys.executable, "-m", "gt", "trace", "summary", str(path)], capture_output=True, text=True,
                       timeout=60)
    assert s.returncode == 0, s.stderr
    mul = next(line for line in s.stdout.splitlines() if line.startswith("mul "))
    assert mul.split()[1] == "3"  # count
    assert "waiting in 1 syncs" in s.stdout and "<string>:5" in s.stdout  # the .item() line


def test_gt_trace_plot_draws_the_timeline(tmp_path):
    path, png = tmp_path / "t.json", tmp_path / "timeline.png"
    with gt.profiler.trace(str(path)):
        (gt.ones(5) * 3.0).sum().item()
    p = subprocess.run([sys.executable, "-m", "gt", "trace", "plot", str(path), "-o", str(png)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    slices, _ = events(path)
    assert p.stdout.strip() == f"{png}: {len(slices)} slices"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
