"""The commands `pip install` puts on PATH: gt-dispatcher, gt-worker, gt-opt and gt."""
import os
import shutil
import subprocess
import sysconfig

import numpy as np
import pytest

from gt import _C
from conftest import Daemons

SCRIPTS = sysconfig.get_path("scripts")  # where pip put the console scripts of this Python
ENV = dict(os.environ, PATH=SCRIPTS + os.pathsep + os.environ.get("PATH", ""))
ENV.pop("GT_BIN_DIR", None)


@pytest.mark.parametrize("name,says", [("gt-dispatcher", "GT dispatcher"), ("gt-worker", "GT worker"),
                                       ("gt-opt", "GT optimizer driver"), ("gt", "GT's command-line tools")])
def test_each_command_is_on_path_and_answers_help(name, says):
    assert shutil.which(name, path=ENV["PATH"]), f"{name} is not in {SCRIPTS}"
    out = subprocess.run([name, "--help"], env=ENV, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert says in out.stdout


def test_the_readmes_daemons_serve_a_client():
    # README, "Running the daemons yourself": gt-dispatcher -p PORT, then gt-worker --host ... -p PORT.
    d = Daemons(env=ENV, bindir="")
    try:
        assert os.path.basename(os.readlink(f"/proc/{d.dispatcher.pid}/exe")) == "gt-dispatcher"  # exec'd, no wrapper left
        c = d.client()
        x, _, _ = c.upload(np.arange(3, dtype=np.float32), [3], 0)
        y, _, _ = c.emit(_C.op_code("exp"), [x])
        np.testing.assert_allclose(np.frombuffer(c.fetch(y)[0], np.float32), np.exp(np.arange(3)), rtol=1e-6)
    finally:
        d.stop()
