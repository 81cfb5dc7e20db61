"""Bad input: clear errors at the user's line, and the daemons keep serving."""
import os
import signal
import socket
import time

import numpy as np
import pytest

import gt
from conftest import Daemons


def test_shape_mismatch_raises_at_user_line():
    a, b = gt.ones(4, 3), gt.ones(4)
    with pytest.raises(ValueError, match=r"shapes \[4, 3\] and \[4\] cannot be broadcast") as info:
        a + b  # noqa: B018
    frames = [f for f in info.traceback if f.path == __file__ or str(f.path) == __file__]
    assert frames, "the traceback should include this test's line"
    with pytest.raises(ValueError, match="contraction sizes differ"):
        gt.ones(2, 3) @ gt.ones(2, 3)
    with pytest.raises(ValueError, match="cannot reshape"):
        gt.ones(2, 3).reshape(4, 2)


def test_each_op_carries_the_line_that_issued_it():
    # The client caches file:line by (code object, instruction): the same function issuing
    # from several lines, called over and over, must still name each line.
    import inspect
    x = gt.ones(3)

    def two_lines(x):
        y = x + 1
        first = gt._C.last_location()
        z = y * 2
        return first, gt._C.last_location(), z

    start = inspect.getsourcelines(two_lines)[1]
    for _ in range(3):
        first, second, _ = two_lines(x)
        assert first == f"{__file__}:{start + 1}"
        assert second == f"{__file__}:{start + 3}"


def test_unknown_dtype():
    with pytest.raises(TypeError, match="unknown dtype 'float7'"):
        gt.zeros(2, dtype="float7")
    with pytest.raises(TypeError, match="unsupported dtype"):
        gt.from_numpy(np.zeros(2, dtype=np.complex64))


def test_item_on_non_scalar():
    with pytest.raises(RuntimeError, match="6 elements cannot be converted"):
        gt.ones(2, 3).item()
    assert gt.ones(1, 1).item() == 1.0


def test_worker_failure_names_op_and_line(daemons):
    c = daemons.client()
    # 8 bytes for a 4-element float32 tensor: the worker refuses it and poisons what depends on it.
    tid, _, _ = c.upload(np.zeros(2, dtype=np.float32), [4], 0)
    exp_id, _, _ = c.emit(gt._C.op_code("exp"), [tid])
    with pytest.raises(gt.RemoteError) as info:
        c.fetch(exp_id)
    assert "upload at" in str(info.value) and "carries 8 bytes" in str(info.value)
    assert os.path.basename(__file__) in str(info.value)
    # The session keeps working.
    ok, _, _ = c.upload(np.ones(2, dtype=np.float32), [2], 0)
    assert np.frombuffer(c.fetch(ok)[0], np.float32).tolist() == [1.0, 1.0]


def test_malformed_message_does_not_stop_the_dispatcher(daemons):
    with socket.create_connection(("127.0.0.1", daemons.port)) as s:
        s.sendall(b"\xff\xff\xff\x7f" + os.urandom(256))  # not a Cap'n Proto message
        s.settimeout(5)
        try:
            s.recv(1024)  # the dispatcher closes this connection
        except (ConnectionResetError, socket.timeout):
            pass
    assert daemons.dispatcher.poll() is None
    c = daemons.client()
    tid, _, _ = c.upload(np.arange(3, dtype=np.float32), [3], 0)
    assert np.frombuffer(c.fetch(tid)[0], np.float32).tolist() == [0.0, 1.0, 2.0]


def test_killed_worker_fails_pending_fetch():
    d = Daemons()
    try:
        c = d.client()
        x, _, _ = c.upload(np.ones((256, 256), dtype=np.float32), [256, 256], 0)
        for _ in range(200):
            x, _, _ = c.emit(gt._C.op_code("matmul"), [x, x])
        c.flush()
        d.workers[0].send_signal(signal.SIGKILL)
        start = time.time()
        with pytest.raises((gt.RemoteError, ConnectionError), match="died|lost|disconnected"):
            c.fetch(x)
        assert time.time() - start < 10
        assert d.dispatcher.poll() is None  # the dispatcher is still there
        assert d.client().num_workers() == 0
    finally:
        d.stop()


def test_connect_to_closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once closed
    start = time.time()
    with pytest.raises(ConnectionError, match=f"127.0.0.1:{port}"):
        gt._C.Client("127.0.0.1", port, "", 3.0)
    assert time.time() - start < 5
