"""Several clients at once against one dispatcher; sessions cannot see each other's tensors."""
import os
import shutil
import subprocess
import struct
import time
import sys
import textwrap

import numpy as np
import pytest

import gt


CLIENT = textwrap.dedent("""
    import sys, numpy as np
    import gt
    gt.connect("127.0.0.1:{port}")
    k = int(sys.argv[1])
    x = gt.tensor(np.arange(100, dtype=np.float32).reshape(10, 10)) * k
    for _ in range(50):
        x = (x @ gt.ones(10, 10) * 0.01 + k).relu()
    expected = np.arange(100, dtype=np.float64).reshape(10, 10) * k
    for _ in range(50):
        expected = np.maximum(expected @ np.ones((10, 10)) * 0.01 + k, 0)
    assert np.allclose(x.numpy(), expected, rtol=1e-4), (k, x.numpy()[0, :3], expected[0, :3])
    print("ok", k)
""")


def test_four_clients_at_once(daemons):
    script = CLIENT.format(port=daemons.port)
    procs = [subprocess.Popen([sys.executable, "-c", script, str(k)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for k in range(1, 5)]
    for k, p in enumerate(procs, start=1):
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert out.strip() == f"ok {k}"


def test_sessions_are_isolated(daemons):
    a, b = daemons.client(), daemons.client()
    for _ in range(5):
        a.upload(np.full(3, 7.0, dtype=np.float32), [3], 0)
    own_id, _, _ = b.upload(np.full(2, 1.0, dtype=np.float32), [2], 0)
    data, shape, _ = b.fetch(own_id)
    assert np.frombuffer(data, np.float32).tolist() == [1.0, 1.0]  # B's id 1 is B's tensor
    with pytest.raises(gt.RemoteError, match="does not exist in this session"):
        b.fetch(4)  # exists only in A's namespace
    data, _, _ = a.fetch(4)
    assert np.frombuffer(data, np.float32).tolist() == [7.0, 7.0, 7.0]


def test_disconnect_frees_the_session(daemons):
    c = daemons.client()
    for _ in range(3):
        c.upload(np.zeros(1000, dtype=np.float32), [1000], 0)
    c.sync()
    del c  # the dispatcher frees what the session held
    probe = daemons.client()
    probe.sync()
    assert probe.num_workers() == 1


def test_instruction_log_and_ir_dump(tmp_path):
    from conftest import Daemons
    log, dump = tmp_path / "instructions.log", tmp_path / "ir"
    dump.mkdir()
    d = Daemons(env={"GT_INSTRUCTION_LOG": str(log), "GT_DUMP_IR": str(dump)})
    try:
        c = d.client()
        a, _, _ = c.upload(np.ones(4, dtype=np.float32), [4], 0)
        b, _, _ = c.emit(gt._C.op_code("exp"), [a])
        c.fetch(b)
    finally:
        d.stop()
    lines = log.read_text().splitlines()
    assert any(" recv upload id=1" in l for l in lines), lines
    assert any(" dispatch exp id=2 worker=0 at=" in l and "test_sessions.py" in l for l in lines), lines
    assert lines[0].startswith("# GT_INSTRUCTION_LOG columns: unix time in microseconds")  # a header names them
    assert all(l.split()[0].isdigit() for l in lines[1:])  # timestamp first
    placed = sorted(dump.glob("*-placed.mlir"))
    assert placed and "gt.exp" in placed[0].read_text() and "gt.worker = 0" in placed[0].read_text()


def test_recorded_worker_programs_carry_each_batchs_values_on_a_plan_hit(tmp_path):
    # A repeated step replays its cached plan; the worker program is written from the plan's
    # steps with this batch's ids, fill value and upload bytes. GT_RECORD writes what was sent.
    from conftest import Daemons
    record = tmp_path / "record"
    record.mkdir()
    d = Daemons(env={"GT_RECORD": str(record)})
    try:
        c = d.client()
        full, add = gt._C.op_code("full"), gt._C.op_code("add")
        sent = []
        for step in range(4):
            data = np.full(8, 100.0 + step, dtype=np.float32)
            value = 0.25 + step
            u, _, _ = c.upload(data, [8], 0)
            f, _, _ = c.emit(full, [], {"shape": [8], "dtype": 0, "value": value})
            s, _, _ = c.emit(add, [u, f])
            got = np.frombuffer(c.fetch(s)[0], dtype=np.float32)
            assert np.allclose(got, 100.0 + step + value), (step, got)
            sent.append((data.tobytes(), struct.pack("<d", value)))
            for i in (u, f, s):
                c.release(i)
        stats = c.stats()
        assert stats["dispatcher_plan_cache_hits"] >= 2, stats
    finally:
        d.stop()
    programs = [p.read_bytes() for p in sorted(record.glob("worker0-*.bin"))]
    for data, value in sent[2:]:  # steps 2 and 3 hit the plan of step 1
        holding = [p for p in programs if data in p]
        assert len(holding) == 1, len(holding)
        assert value in holding[0]
        assert all(v not in holding[0] for _, v in sent if v != value)


def test_tensors_released_together_are_freed_by_one_instruction(daemons):
    # Half of a training step's instructions were frees, one per tensor. The client names the
    # tensors released since its last op in one free, capture gives each its gt.free, and the
    # plan sends consecutive frees to the worker as one instruction again.
    c = daemons.client()
    full = gt._C.op_code("full")
    made = [c.emit(full, [], {"shape": [1000], "dtype": 0, "value": float(i)})[0] for i in range(10)]
    assert np.frombuffer(c.fetch(made[3])[0], np.float32)[0] == 3.0
    before = c.stats()
    for i in made:
        c.release(i)
    kept, _, _ = c.emit(full, [], {"shape": [2], "dtype": 0, "value": 7.0})
    assert np.frombuffer(c.fetch(kept)[0], np.float32).tolist() == [7.0, 7.0]
    after = c.stats()
    assert after["dispatcher_instructions"] - before["dispatcher_instructions"] == 2  # the free, the full
    assert after["instructions"] - before["instructions"] == 2  # on the worker too
    assert after["live_tensors"] - before["live_tensors"] == 1 - 10
    with pytest.raises(RuntimeError, match="does not exist"):
        c.fetch(made[0])


def test_a_repeated_step_runs_its_kept_program_with_each_batchs_ids_values_and_bytes():
    # A plan's first hit sends the worker the whole program and the worker keeps it; later hits
    # send only the batch's ids, fill values, seeds and upload bytes, written into a copy of it.
    from conftest import Daemons
    d = Daemons()
    try:
        c = d.client()
        full, add, mul, randn = (gt._C.op_code(n) for n in ("full", "add", "mul", "randn"))
        noise = []
        for step, seed in enumerate([7, 8, 7, 8, 7, 8]):
            data = np.arange(8, dtype=np.float32) + 10 * step
            u, _, _ = c.upload(data, [8], 0)
            f, _, _ = c.emit(full, [], {"shape": [8], "dtype": 0, "value": 0.5 + step})
            r, _, _ = c.emit(randn, [], {"shape": [8], "dtype": 0, "seed": seed})
            s, _, _ = c.emit(add, [u, f])
            t, _, _ = c.emit(mul, [s, r])
            got = np.frombuffer(c.fetch(t)[0], np.float32)
            noise.append(np.frombuffer(c.fetch(r)[0], np.float32))
            np.testing.assert_allclose(got, (data + 0.5 + step) * noise[-1], rtol=1e-6)
            for i in (u, f, r, s, t):
                c.release(i)
        assert not np.array_equal(noise[0], noise[1])
        for step in (2, 3, 4, 5):  # kept from the second step on, replayed from the third
            np.testing.assert_array_equal(noise[step], noise[step % 2])
        stats = c.stats()
        assert stats["kept_programs"] == 1 and stats["kept_program_runs"] >= 3, stats
        del c
        deadline = time.time() + 10  # the session's end drops its kept programs
        while d.client().stats()["kept_programs"] != 0:
            assert time.time() < deadline
            time.sleep(0.05)
    finally:
        d.stop()


def test_item_after_more_work_answers_once_its_tensor_is_made():
    # loss.item() after optimizer.step(): the worker answers as soon as the loss exists, while
    # the work issued after it (here a chain of matmuls) still runs. Through the direct link
    # (the auto-started worker) and through the dispatcher (a worker without --listen).
    from conftest import Daemons
    x = gt.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    before = gt.debug.stats()["scheduler_fetches_mid_program"]
    loss = (x * 2).sum()
    w = gt.full((256, 256), 0.01)
    for _ in range(300):
        w = gt.tanh(w @ w)
    assert loss.item() == 30.0
    assert gt.debug.stats()["scheduler_fetches_mid_program"] > before
    assert w[0, 0].item() == pytest.approx(1.0)  # tanh(256 w^2) reaches 1 in four steps
    d = Daemons()
    try:
        c = d.client()
        full, mul, sum_, matmul = (gt._C.op_code(n) for n in ("full", "mul", "sum", "matmul"))
        a, _, _ = c.emit(full, [], {"shape": [4], "dtype": 0, "value": 1.5})
        s, _, _ = c.emit(sum_, [a], {"axes": [0], "keepdims": False})
        m, _, _ = c.emit(full, [], {"shape": [256, 256], "dtype": 0, "value": 0.001})
        for _ in range(300):
            m, _, _ = c.emit(matmul, [m, m])
        assert np.frombuffer(c.fetch(s)[0], np.float32).tolist() == [6.0]
        assert c.stats()["scheduler_fetches_mid_program"] == 1
        del c
    finally:
        d.stop()


def test_kept_programs_leave_the_worker_with_their_plans():
    # A session whose batches keep changing: the dispatcher's plan cache drops plans (at 256),
    # and the workers drop the programs they kept for them.
    from conftest import Daemons
    d = Daemons()
    try:
        c = d.client()
        full, add = gt._C.op_code("full"), gt._C.op_code("add")
        for n in range(1, 301):
            for _ in range(3):  # the last two batches free as much: a plan, kept at its first hit
                x, _, _ = c.emit(full, [], {"shape": [2], "dtype": 0, "value": 1.0})
                made = [x]
                for _ in range(n):
                    made.append(c.emit(add, [made[-1], x])[0])
                assert np.frombuffer(c.fetch(made[-1])[0], np.float32).tolist() == [n + 1.0] * 2
                for i in made:
                    c.release(i)
        stats = c.stats()
        assert 0 < stats["kept_programs"] <= 256, stats
    finally:
        d.stop()


def test_connecting_after_an_idle_stretch(daemons):
    # This thread's kj event loop last ran at the fetch; a connect 1 s later with a 0.5 s
    # timeout must count from now, not from the fetch.
    gt.tensor([1.0]).numpy()
    time.sleep(1.0)
    c = gt._C.Client("127.0.0.1", daemons.port, "", 0.5)
    assert c.num_workers() == 1


UNIX_CLIENT = textwrap.dedent("""
    import sys
    import gt
    gt.connect(sys.argv[1])
    print((gt.arange(10) * 2).sum().item())
""")


def test_a_dispatchers_unix_socket_serves_clients_and_workers(tmp_path):
    from conftest import Daemons
    path = str(tmp_path / "d.sock")
    token = "unix-test-token"
    d = Daemons(dispatcher_args=("--unix", path), host="unix:" + path, env={"GT_TOKEN": token})  # the worker joins there
    try:
        over_unix = d.client()
        over_tcp = gt._C.Client("127.0.0.1", d.port, token, 5.0)  # the TCP port stays open
        assert over_unix.num_workers() == 1 and over_tcp.num_workers() == 1
        out = subprocess.run([sys.executable, "-c", UNIX_CLIENT, "unix:" + path], capture_output=True, text=True,
                             timeout=120, env=dict(d.env))
        assert out.returncode == 0, out.stderr
        assert float(out.stdout) == 90.0
        # The same handshake as over TCP: a wrong token is refused, naming where.
        with pytest.raises(ConnectionError, match=f"unix:{path}.*token"):
            gt._C.Client("unix:" + path, 0, "wrong", 5.0)
        # A second dispatcher may not take over a socket that a live one listens on...
        second = subprocess.run([os.path.join(gt._runtime.bin_dir(), "gt-dispatcher"), "-p", "0", "--unix", path],
                                capture_output=True, text=True, timeout=30, env=d.env)
        assert second.returncode != 0 and "another process is listening there" in second.stderr, second.stderr
    finally:
        d.stop()
    # ...but one left behind by a killed dispatcher is replaced.
    assert os.path.exists(path)
    again = Daemons(dispatcher_args=("--unix", path), host="unix:" + path, env={"GT_TOKEN": token})
    try:
        assert again.client().num_workers() == 1
    finally:
        again.stop()


def test_connect_names_both_address_forms():
    for bad in ("localhost", "host:port", "unix:"):
        with pytest.raises(ValueError, match="'host:port' or 'unix:PATH'"):
            gt.connect(bad)


NEW_SIZES_OF_A_KNOWN_PROGRAM = """
import gt, numpy as np
rng = np.random.default_rng(0)
base_np = rng.standard_normal((40, 16)).astype(np.float32)
w_np = rng.standard_normal((16, 8)).astype(np.float32)
base, w = gt.tensor(base_np), gt.tensor(w_np)

def step(n):
    return (((base[:n] * 2.0 + 1.0).tanh() @ w).sum(0)).numpy()

def ref(n):
    return (np.tanh(base_np[:n] * 2.0 + 1.0) @ w_np).sum(0)

def counts():
    s = gt.debug.stats()
    return s["dispatcher_direct_batches"], s["dispatcher_plan_cache_misses"], s["dispatcher_plan_cache_hits"]

def run_all(sizes):  # the counters' changes (reading them flushes: one batch shape follows it)
    before = counts()
    for n in sizes:
        np.testing.assert_allclose(step(n), ref(n), rtol=1e-5, atol=1e-5)
    return tuple(a - b for a, b in zip(counts(), before))

# (The first batch after reading the counters may be of a shape the session has not run yet:
# one batch in the first round may go through the passes.)
counts()  # the uploads go first
run_all(range(2, 4))  # the program's first runs: the passes
sizes = range(4, 20)
direct, misses, hits = run_all(sizes)  # new sizes of a known program: sent as they came
assert direct >= len(sizes) - 1 and misses <= 1, (direct, misses, hits)
for _ in range(15):  # again: the direct plans, replayed
    direct, misses, hits = run_all(sizes)
    assert direct == 0 and misses == 0 and hits >= len(sizes), (direct, misses, hits)
direct, misses, hits = run_all(sizes)  # their 16th reuse: the passes
assert direct == 0 and misses >= len(sizes) - 1, (direct, misses, hits)
direct, misses, hits = run_all(sizes)  # then the passes' plans, replayed
assert direct == 0 and misses == 0 and hits >= len(sizes), (direct, misses, hits)
print("ok")
"""


def test_a_program_at_new_sizes_skips_the_passes_until_it_repeats():
    """Generation at a growing length: each step is a program the session ran before, at a new
    size. The dispatcher sends it to the worker as it came (no capture, passes or fusion: no
    stall) and caches that direct plan; reused (a sequence generated again) it is a plan hit,
    and its 16th reuse (SessionImpl::kPromoteAfter) runs the passes and caches their plan.
    (A session of its own: the plan cache and the programs it has seen are per session.)"""
    out = subprocess.run([sys.executable, "-c", NEW_SIZES_OF_A_KNOWN_PROGRAM], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-3000:]


def test_a_known_program_with_a_bad_operand_at_a_new_size_still_names_the_error():
    """A batch of a known program that the op table rejects (a matmul whose sizes do not
    agree) is not sent directly: the passes see it and the error names the op and the line."""
    a, w = gt.ones((4, 8)), gt.ones((8, 3))
    for n in (2, 3):
        (a[:n] @ w).numpy()
    bad = gt.ones((5, 3))
    with pytest.raises(Exception, match="matmul"):
        (a[:3] @ bad).numpy()
    np.testing.assert_allclose((a[:4] @ w).numpy(), np.full((4, 3), 8.0))


def test_an_auto_started_session_leaves_no_file_open():
    # The daemons' log files and the dispatcher's stdout were left open in the client
    # (ResourceWarning "unclosed file" at exit with warnings on).
    p = subprocess.run([sys.executable, "-W", "always", "-c", "import gt; print(gt.ones(2).sum().item())"],
                       capture_output=True, text=True, timeout=120, env={k: v for k, v in os.environ.items()
                                                                         if k != "GT_SERVER"})
    assert p.returncode == 0 and p.stdout.strip() == "2.0", p.stderr[-2000:]
    assert "ResourceWarning" not in p.stderr, p.stderr[-2000:]


def _auto_started(code):
    env = {k: v for k, v in os.environ.items() if k not in ("GT_SERVER", "GT_VERBOSE")}
    p = subprocess.run([sys.executable, "-c", "import gt\nfrom gt import _runtime\n" + textwrap.dedent(code)],
                       capture_output=True, text=True, timeout=120, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    return p.stdout.split()


def test_an_auto_started_session_removes_its_log_folder_at_exit():
    # Every run left /tmp/gt-XXXXXXXX behind (its logs and sockets): thousands after a while.
    out = _auto_started("""
        print(gt.ones(2).sum().item(), _runtime._log_dir)
    """)
    assert out[0] == "2.0" and os.path.basename(out[1]).startswith("gt-")
    assert not os.path.exists(out[1])


def test_the_log_folder_stays_when_a_daemon_died():
    # A worker that died on its own leaves its log for the user to read.
    out = _auto_started("""
        import signal
        gt.ones(2).sum().item()
        worker = _runtime._processes[-1]
        worker.send_signal(signal.SIGKILL)
        worker.wait()
        print(_runtime._log_dir)
    """)
    try:
        assert os.path.isfile(os.path.join(out[0], "worker0.log"))
    finally:
        shutil.rmtree(out[0], ignore_errors=True)


def test_runtime_notices_go_above_tqdm_bars(monkeypatch, capsys):
    # The background-compile notice printed through a progress bar's line; with bars drawn it
    # goes through tqdm.write (which clears the bars, prints, and draws them again).
    import io
    from tqdm import tqdm
    from gt import _runtime
    _runtime._say("gt: plain")
    assert capsys.readouterr().err == "gt: plain\n"
    written = []
    monkeypatch.setattr(tqdm, "write", classmethod(lambda cls, s, file=None, **kw: written.append(s)))
    with tqdm(total=3, file=io.StringIO()):
        _runtime._say("gt: above the bar")
    assert written == ["gt: above the bar"]
