"""gt.utils.benchmark (torch.utils.benchmark): Timer waits for the workers; Measurement's
statistics; Compare's table. Nothing here asserts a duration."""
import pytest

import gt
from gt.utils import benchmark
from gt.utils.benchmark import Compare, Measurement, Timer


def test_every_measured_block_waits_for_the_workers(monkeypatch):
    calls = []
    real = gt.synchronize
    monkeypatch.setattr(gt, "synchronize", lambda: calls.append(1) or real())
    x = gt.ones(8)
    m = Timer("y = x * 2 + 1", globals={"x": x}).timeit(5)
    assert m.number_per_run == 5 and len(m.raw_times) == 1 and m.raw_times[0] > 0
    assert len(calls) >= 4  # both ends of the warm-up block and of the measured one


def test_blocked_autorange_setup_and_globals():
    m = Timer("z = a @ b", setup="b = a.T", globals={"a": gt.ones(16, 16)}, label="mm", sub_label="16",
              description="gt").blocked_autorange(min_run_time=0.05)
    assert m.number_per_run >= 1 and len(m.times) >= 1 and all(t > 0 for t in m.times)
    text = repr(m)
    assert "mm" in text and "16: gt" in text and "z = a @ b" in text and "runs per measurement" in text
    with pytest.raises(ValueError, match="string of Python"):
        Timer(lambda: None)


def test_measurement_statistics():
    spec = benchmark._TaskSpec("f()", "pass", "", "label", None, None, None, 1)
    m = Measurement(10, [1.0, 2.0, 3.0, 4.0], spec)
    assert m.times == [0.1, 0.2, 0.3, 0.4]
    assert m.median == pytest.approx(0.25) and m.mean == pytest.approx(0.25)
    assert m.iqr == pytest.approx(0.15)  # quartiles 0.175 and 0.325
    assert "Median: 250.00 ms" in repr(m) and "4 measurements, 10 runs per measurement" in repr(m)


def test_compare_prints_a_table_of_medians(capsys):
    spec = benchmark._TaskSpec
    ms = [Measurement(1, [t * 1e-6] * 3, spec("s", "pass", "", "add", size, impl, None, 1))
          for t, size, impl in ((2.0, "64", "gt"), (3.0, "64", "numpy"), (5.0, "1024", "gt"))]
    Compare(ms).print()
    out = capsys.readouterr().out
    assert "add" in out and "numpy" in out and "Times are in microseconds (us)." in out
    row = next(line for line in out.splitlines() if line.startswith("64"))
    assert row.split()[1:] == ["2.0", "3.0"]
