"""A session reads its tensors straight from the worker that holds them (gt-worker --listen,
Session.directReads): one hop instead of two, the same values and errors as through the
dispatcher, a fallback to the dispatcher wherever the worker does not hold a tensor whole, and
a reader socket that admits each session to its own tensors only."""
import os
import signal
import subprocess
import time

import numpy as np
import pytest

import gt
from gt import _C
from conftest import Daemons

TOKEN, WORKER_TOKEN = "client-secret-" + "c" * 20, "worker-secret-" + "d" * 20
SECURED = {"GT_TOKEN": TOKEN, "GT_WORKER_TOKEN": WORKER_TOKEN}
F32 = 0


def listening(tmp_path, workers=1, env=None, worker_args=()):
    """Daemons whose workers accept direct reads on Unix sockets in tmp_path."""
    sockets = [str(tmp_path / f"w{i}.sock") for i in range(workers)]
    d = Daemons(workers=0, env=dict(SECURED, **(env or {})))
    for path in sockets:
        d.workers.append(subprocess.Popen([os.path.join(gt._runtime.bin_dir(), "gt-worker"), "--host", d.host, "-p",
                                           str(d.port), "--listen", "unix:" + path, *worker_args],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=d.env))
    probe = d.client()
    deadline = time.time() + 30
    while probe.num_workers() < workers:
        assert time.time() < deadline, "workers did not register"
        time.sleep(0.01)
    d.sockets = sockets
    return d


@pytest.fixture
def direct(tmp_path):
    d = listening(tmp_path)
    yield d
    d.stop()


def exp_of(c, values):
    x, _, _ = c.upload(np.asarray(values, np.float32), [len(values)], F32)
    return c.emit(_C.op_code("exp"), [x])[0]


def worker_stats(c):
    return c.stats()["by_worker"][0]


def test_the_auto_started_session_reads_from_its_worker():
    x = gt.arange(6, dtype=gt.float32).reshape(2, 3) * 2
    np.testing.assert_array_equal(x.numpy(), np.arange(6, dtype=np.float32).reshape(2, 3) * 2)
    client = gt._runtime.client()
    assert client.read_path().startswith("direct (worker 0 at unix:"), client.read_path()
    before = gt.debug.stats()
    assert x.sum().item() == 30.0
    gt.synchronize()
    after = gt.debug.stats()
    assert after["direct_reads"] - before["direct_reads"] == 1  # the sum's value (a sync reads nothing)
    assert after["dispatcher_fetch_bytes"] == before["dispatcher_fetch_bytes"]


def test_a_read_right_after_each_batch_sees_that_batch(direct):
    # The client sends a batch to the dispatcher and at once asks the worker for a result of
    # it: the worker waits until the dispatcher has sent it that batch.
    c = direct.client()
    x, _, _ = c.upload(np.zeros(4, np.float32), [4], F32)
    for i in range(200):
        x = c.emit(_C.op_code("add"), [x, c.upload(np.ones(4, np.float32), [4], F32)[0]])[0]
        data, shape, _ = c.fetch(x)
        assert np.frombuffer(data, np.float32).tolist() == [i + 1.0] * 4
    c.sync()
    assert c.read_path().startswith("direct"), c.read_path()
    stats = worker_stats(c)
    assert stats["direct_reads"] == 200 and stats["direct_read_misses"] == 0


def test_a_sync_returns_once_the_sessions_work_has_run(direct):
    c = direct.client()
    x, _, _ = c.upload(np.ones((192, 192), np.float32), [192, 192], F32)
    for _ in range(300):
        x = c.emit(_C.op_code("matmul"), [x, x])[0]
        x = c.emit(_C.op_code("div"), [x, c.emit(_C.op_code("sum"), [x])[0]])[0]
    c.sync()
    (w,) = _C.Monitor("127.0.0.1", direct.port, TOKEN).poll()["workers"]
    assert w["stats"]["scheduler_queued"] == 0
    assert c.read_path().startswith("direct")


def test_errors_read_directly_name_the_op_and_the_users_line(tmp_path):
    # 32 MiB per session: the third 12 MiB tensor fails on the worker.
    d = listening(tmp_path, worker_args=["--memory", "64MiB", "--session-memory", "32MiB"])
    try:
        c = d.client()
        full = [c.emit(_C.op_code("full"), [], {"shape": [3 << 20], "value": 1.0})[0] for _ in range(3)]
        assert np.frombuffer(c.fetch(full[1])[0], np.float32)[:2].tolist() == [1, 1]
        with pytest.raises(gt.RemoteError, match=r"full at .*test_direct_reads.py:\d+: out of memory"):
            c.fetch(full[2])
        assert c.read_path().startswith("direct")
        (s,) = _C.Monitor("127.0.0.1", d.port, TOKEN).poll()["sessions"]  # gt top counts it
        assert s["errors"] == 1 and "out of memory" in s["last_error"]
    finally:
        d.stop()


def test_a_tensor_over_64_mib_is_read_in_pieces(direct):
    c = direct.client()
    n = 21 << 20  # 84 MiB of float32: two reads
    x = c.emit(_C.op_code("full"), [], {"shape": [n], "value": 3.0})[0]
    data, shape, _ = c.fetch(c.emit(_C.op_code("add"), [x, x])[0])
    assert shape == (n,) and len(data) == 4 * n
    values = np.frombuffer(data, np.float32)
    assert values[0] == values[(1 << 24) - 1] == values[1 << 24] == values[-1] == 6.0
    stats = worker_stats(c)
    assert stats["direct_reads"] == 2 and stats["direct_read_bytes"] == 4 * n


def test_gt_top_counts_what_a_session_read_directly(direct):
    c = direct.client()
    c.fetch(exp_of(c, [1, 2, 3, 4]))
    assert c.read_path().startswith("direct")
    (s,) = _C.Monitor("127.0.0.1", direct.port, TOKEN).poll()["sessions"]
    assert s["fetch_bytes"] == 16 and s["errors"] == 0


def test_a_tensor_the_dispatcher_refused_is_read_through_it(tmp_path):
    d = listening(tmp_path, env={"GT_MAX_TENSORS": "4"})
    try:
        c = d.client()
        kept = [exp_of(c, [1, 2]) for _ in range(2)]  # 4 tensors: the session's most
        c.sync()
        refused = exp_of(c, [3, 4])  # its batch is refused whole: no worker ever hears of it
        with pytest.raises(gt.RemoteError, match="GT_MAX_TENSORS"):
            c.fetch(refused)
        assert c.read_path().startswith("direct")  # the worker said "not here"; the link stays
        np.testing.assert_allclose(np.frombuffer(c.fetch(kept[0])[0], np.float32), np.exp([1, 2]), rtol=1e-6)
        assert worker_stats(c)["direct_read_misses"] == 1
    finally:
        d.stop()


def test_sharded_tensors_are_put_together_by_the_dispatcher(tmp_path):
    config = tmp_path / "data.yaml"
    config.write_text("data:\n  shard: {axis: 0}\n")
    d = listening(tmp_path, workers=2)
    try:
        c = d.client()
        c.fetch(exp_of(c, [0]))  # opens the direct link
        assert c.read_path().startswith("direct")
        with pytest.raises(ValueError):  # refused: the session keeps no config, and its direct reads
            c.load_config("data:\n  shard: {axis: 7, bogus: 1}\n", "bad.yaml")
        assert c.read_path().startswith("direct")
        # A config of compile: entries only (gt.compile's) places nothing: reads stay direct.
        c.load_config("fused:\n  compile: true\n", "fused.yaml")
        c.fetch(exp_of(c, [1]))
        assert c.read_path().startswith("direct")
        c.load_config(config.read_text(), str(config))
        c.set_signal("data")
        x, _, _ = c.upload(np.arange(8, dtype=np.float32), [8], F32)
        data, _, _ = c.fetch(c.emit(_C.op_code("mul"), [x, x])[0])
        np.testing.assert_array_equal(np.frombuffer(data, np.float32), np.arange(8) ** 2)
        assert c.read_path().startswith("through the dispatcher"), c.read_path()
    finally:
        d.stop()


def test_sessions_whose_work_moves_to_a_new_worker_read_and_sync_through_the_dispatcher(tmp_path):
    # A session's tensors go to its first live worker counting from its number: when a second
    # worker joins, one of two consecutive sessions moves there, away from its reader worker.
    d = listening(tmp_path)
    try:
        clients = [d.client(), d.client()]
        for c in clients:
            c.fetch(exp_of(c, [0]))
            assert c.read_path().startswith("direct (worker 0")
        d.workers.append(subprocess.Popen([os.path.join(gt._runtime.bin_dir(), "gt-worker"), "--host", d.host, "-p",
                                           str(d.port), "--listen", "unix:" + str(tmp_path / "w1.sock")],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=d.env))
        deadline = time.time() + 30
        while clients[0].num_workers() < 2:
            assert time.time() < deadline, "the second worker did not register"
            time.sleep(0.01)
        for c in clients:
            x, _, _ = c.upload(np.ones((512, 512), np.float32), [512, 512], F32)
            for _ in range(60):  # about a quarter second of GEMMs
                x = c.emit(_C.op_code("matmul"), [x, x])[0]
                x = c.emit(_C.op_code("div"), [x, c.emit(_C.op_code("sum"), [x], {"axes": [0, 1]})[0]])[0]
            c.sync()  # waits for the worker that ran it, wherever that is
            for w in _C.Monitor("127.0.0.1", d.port, TOKEN).poll()["workers"]:
                assert w["stats"]["scheduler_queued"] == 0
            data, _, _ = c.fetch(x)
            np.testing.assert_allclose(np.frombuffer(data, np.float32).sum(), 1.0, rtol=1e-4)
        stats = clients[0].stats()["by_worker"]
        assert stats[0]["direct_read_misses"] == 1  # the moved session's new tensor: not on its reader
        assert all(c.read_path().startswith("direct (worker 0") for c in clients)
    finally:
        d.stop()


def test_a_worker_without_listen_is_read_through_the_dispatcher(daemons):
    c = daemons.client()
    data, _, _ = c.fetch(exp_of(c, [0, 1]))
    np.testing.assert_allclose(np.frombuffer(data, np.float32), np.exp([0, 1]), rtol=1e-6)
    assert c.read_path().startswith("through the dispatcher: the dispatcher names no worker"), c.read_path()


def test_gt_direct_reads_0_keeps_reads_on_the_dispatcher(direct, monkeypatch):
    monkeypatch.setenv("GT_DIRECT_READS", "0")
    c = direct.client()
    c.fetch(exp_of(c, [1]))
    assert c.read_path() == "through the dispatcher: GT_DIRECT_READS=0"
    assert worker_stats(c)["direct_reads"] == 0


def test_a_killed_worker_fails_the_read_through_the_dispatcher(tmp_path):
    d = listening(tmp_path)
    try:
        c = d.client()
        x = exp_of(c, [1, 2])
        c.fetch(x)
        d.workers[0].kill()
        d.workers[0].wait()
        with pytest.raises(gt.RemoteError, match="worker 0 died"):
            c.fetch(x)
        assert c.read_path().startswith("through the dispatcher: lost the direct link to worker 0")
    finally:
        d.stop()


def test_a_stopped_worker_fails_the_read_instead_of_hanging(tmp_path, monkeypatch):
    d = listening(tmp_path, env={"GT_WORKER_TIMEOUT": "2"})
    try:
        monkeypatch.setenv("GT_TIMEOUT", "2")
        c = d.client()
        x = exp_of(c, [1, 2])
        c.fetch(x)
        d.workers[0].send_signal(signal.SIGSTOP)
        start = time.time()
        with pytest.raises(gt.RemoteError, match="answered no ping"):
            c.fetch(x)
        assert time.time() - start < 15
        assert d.dispatcher.poll() is None
        d.workers[0].send_signal(signal.SIGCONT)
    finally:
        d.stop()


# ---------------------------------------------------------------- the reader socket, attacked

def raw_session(d):
    r = _C.RawConnection("127.0.0.1", d.port, "", 10.0)
    r.open_session(TOKEN)
    return r


def test_a_wrong_reader_token_closes_the_connection(direct):
    r = _C.RawReader("unix:" + direct.sockets[0], 0, 5.0)
    with pytest.raises(RuntimeError, match="wrong reader token"):
        r.open("0" * 64)
    time.sleep(0.5)
    with pytest.raises(RuntimeError) as closed:  # closed: nothing more is answered
        r.open("0" * 64)
    assert "wrong reader token" not in str(closed.value)
    c = direct.client()
    assert np.frombuffer(c.fetch(exp_of(c, [0]))[0], np.float32).tolist() == [1.0]
    assert c.read_path().startswith("direct")


def test_a_session_reads_only_its_own_tensors(direct):
    victim = direct.client()
    secret = exp_of(victim, [42.0])
    victim.fetch(secret)
    attacker = raw_session(direct)
    attacker.submit([{"op": "upload", "result": 1000, "shape": [1], "dtype": F32, "data": np.ones(1, np.float32).tobytes()}])
    worker, address, token = attacker.direct_reads()
    assert address == "unix:" + direct.sockets[0]
    r = _C.RawReader(address, 0, 5.0)
    r.open(token)
    assert r.fetch(1000, 1, F32, [1])[:2] == (True, np.ones(1, np.float32).tobytes())  # its own tensor
    assert not r.fetch(1000, 1, F32, [2])[0]  # (not as a tensor of another type)
    # The victim's ids name the attacker's own (absent) tensors: nothing of the victim's is read.
    for sid in (secret, secret - 1, secret + 1):
        here, data, error = r.fetch(sid, 1, F32, [1])
        assert not here and data == b"" and error == ""
    for bad in (1 << 44, (1 << 64) - 1):  # ids outside a session's range
        with pytest.raises(RuntimeError, match="no tensor has id"):
            r.fetch(bad, 1, F32, [1])


def test_the_dispatcher_refuses_ids_past_a_sessions_range(direct):
    # A session's number is part of its tensors' worker ids: the ids it picks must stay below 2^44.
    attacker = raw_session(direct)
    one = np.ones(1, np.float32).tobytes()
    attacker.submit([{"op": "upload", "result": 1 << 44, "shape": [1], "dtype": F32, "data": one},
                     {"op": "upload", "result": (1 << 44) - 1, "shape": [1], "dtype": F32, "data": one}])
    with pytest.raises(RuntimeError, match="upload: tensor id 17592186044416 is over a session's largest"):
        attacker.fetch(1 << 44)
    assert attacker.fetch((1 << 44) - 1)[0] == one


def test_reads_waiting_for_unsent_batches_are_bounded(direct):
    attacker = raw_session(direct)
    _, address, token = attacker.direct_reads()
    r = _C.RawReader(address, 0, 5.0)
    r.open(token)
    for _ in range(70):  # batch 10**9 never comes
        r.fetch_later(1, 10 ** 9, F32, [1])
    errors = r.later_errors(1.0)
    assert len(errors) == 70 - 64 and all("too many reads" in e for e in errors)
    c = direct.client()
    assert np.frombuffer(c.fetch(exp_of(c, [0]))[0], np.float32).tolist() == [1.0]
    del r  # the waiting reads go with their connection
    assert np.frombuffer(c.fetch(exp_of(c, [0]))[0], np.float32).tolist() == [1.0]


def test_a_session_holds_a_bounded_number_of_readers(direct):
    attacker = raw_session(direct)
    _, address, token = attacker.direct_reads()
    readers = [_C.RawReader(address, 0, 5.0) for _ in range(9)]
    for r in readers[:8]:
        r.open(token)
    with pytest.raises(RuntimeError, match="the most readers open"):
        readers[8].open(token)
    readers[0] = None  # its connection closes, and its reader with it
    deadline = time.time() + 10
    while True:
        try:
            readers[8].open(token)
            break
        except RuntimeError:
            assert time.time() < deadline, "a closed reader was not given back"
            time.sleep(0.05)
    c = direct.client()  # another session reads directly all along
    assert np.frombuffer(c.fetch(exp_of(c, [0]))[0], np.float32).tolist() == [1.0]
    assert c.read_path().startswith("direct")


def test_an_ended_sessions_token_stops_working(direct):
    attacker = raw_session(direct)
    _, address, token = attacker.direct_reads()
    waiting = _C.RawReader(address, 0, 5.0)
    waiting.open(token)
    waiting.fetch_later(1, 10 ** 9, F32, [1])
    del attacker  # the session ends
    deadline = time.time() + 10
    while time.time() < deadline and not waiting.later_errors(0.1):
        pass
    assert any("the session has ended" in e for e in waiting.later_errors(0))
    r = _C.RawReader(address, 0, 5.0)
    with pytest.raises(RuntimeError, match="wrong reader token"):
        r.open(token)


def test_a_silent_reader_connection_is_closed_after_the_handshake_deadline(direct):
    import socket
    s = socket.socket(socket.AF_UNIX)
    s.connect(direct.sockets[0])
    s.settimeout(15)
    start = time.time()
    assert s.recv(1) == b""  # closed by the worker, not by the timeout
    assert time.time() - start < 12
    s.close()


def test_a_tcp_reader_socket_speaks_tls_with_the_workers_certificate(tmp_path):
    from test_hostile import make_certificate
    cert, key = make_certificate(tmp_path)
    d = Daemons(env=dict(SECURED, GT_TLS_CERT=str(cert), GT_TLS_KEY=str(key), GT_TLS_CA=str(cert)), host="localhost",
                tls_ca=str(cert), worker_args=["--listen", "localhost:0"])
    try:
        c = d.client()
        assert np.frombuffer(c.fetch(exp_of(c, [0]))[0], np.float32).tolist() == [1.0]
        path = c.read_path()
        assert path.startswith("direct (worker 0 at localhost:"), path
        port = int(path.rstrip(")").rsplit(":", 1)[1])
        r = _C.RawReader("localhost", port, 3.0)  # in plain text: gets nowhere
        with pytest.raises(RuntimeError):
            r.open("0" * 64)
        assert np.frombuffer(c.fetch(exp_of(c, [0]))[0], np.float32).tolist() == [1.0]
        assert c.read_path() == path
    finally:
        d.stop()
