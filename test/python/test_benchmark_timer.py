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
    spec = benchmark.TaskSpec("f()", "pass", "", "label", None, None, None, 1)
    m = Measurement(10, [1.0, 2.0, 3.0, 4.0], spec)
    assert m.times == [0.1, 0.2, 0.3, 0.4]
    assert m.median == pytest.approx(0.25) and m.mean == pytest.approx(0.25)
    assert m.iqr == pytest.approx(0.15)  # quartiles 0.175 and 0.325
    assert "Median: 250.00 ms" in repr(m) and "4 measurements, 10 runs per measurement" in repr(m)


def test_compare_prints_a_table_of_medians(capsys):
    spec = benchmark.TaskSpec
    ms = [Measurement(1, [t * 1e-6] * 3, spec("s", "pass", "", "add", size, impl, None, 1))
          for t, size, impl in ((2.0, "64", "gt"), (3.0, "64", "numpy"), (5.0, "1024", "gt"))]
    Compare(ms).print()
    out = capsys.readouterr().out
    assert "add" in out and "numpy" in out and "Times are in microseconds (us)." in out
    row = next(line for line in out.splitlines() if line.strip().startswith("64"))
    assert row.replace("|", " ").split()[1:] == ["2.0", "3.0"]


def test_compare_keeps_a_row_per_thread_count_and_env():
    # (The benchmark recipe: two thread counts x two envs were one row.)
    spec = benchmark.TaskSpec
    ms = [Measurement(1, [t * 1e-6] * 3, spec("s", "pass", "", "L", "sub", "d", env, threads))
          for t, threads, env in ((1.0, 1, "A"), (2.0, 1, "B"), (3.0, 2, "A"), (4.0, 2, "B"))]
    lines = str(Compare(ms)).splitlines()
    rows = [line for line in lines if "|" in line and "sub" in line]
    assert [r.split("|")[1].strip() for r in rows] == ["1.0", "2.0", "3.0", "4.0"]
    assert rows[0].split()[0] == "(A)" and rows[1].split()[0] == "(B)"
    assert [line.split()[0] for line in lines if "threads:" in line] == ["1", "2"]


def test_timer_has_torch_in_its_globals_and_measurements_pickle():
    import pickle
    m = Timer("x * y", setup="x = torch.ones((8,)); y = torch.ones((8,))", label="L",
              language=benchmark.Language.PYTHON).timeit(3)
    assert (m.stmt, m.label, m.num_threads, m.number_per_run) == ("x * y", "L", 1, 3)
    again = pickle.loads(pickle.dumps(m))
    assert again.stmt == "x * y" and again.raw_times == m.raw_times
    with pytest.raises(AttributeError):
        m.not_a_field
    merged = Measurement.merge([m, again])
    assert len(merged) == 1 and len(merged[0].times) == 2
