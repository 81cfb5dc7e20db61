"""The daemons and gt-opt as commands on PATH: `pip install` (and `make demo`) installs
`gt-dispatcher`, `gt-worker` and `gt-opt` as console scripts ([project.scripts] in
pyproject.toml) that run the binaries shipped inside the package (gt/bin), with the same
arguments, in the same process (exec)."""
import os
import sys


def _binary(name):
    """The package's own `name` binary ($GT_BIN_DIR first). Never PATH: on PATH, `name` is
    this very script."""
    here = os.path.dirname(os.path.abspath(__file__))
    dirs = [os.environ["GT_BIN_DIR"]] if os.environ.get("GT_BIN_DIR") else []
    dirs.append(os.path.join(here, "bin"))
    try:  # an editable install keeps the extension, and bin/ beside it, in site-packages
        from . import _C
        dirs.append(os.path.join(os.path.dirname(_C.__file__), "bin"))
    except ImportError:
        pass
    for d in dirs:
        path = os.path.join(d, name)
        if os.access(path, os.X_OK):
            return path
    sys.exit(f"{name}: the binary is not in this GT package (looked in {', '.join(dirs)}); "
             "build and install GT with `make build`")


def _run(name):
    path = _binary(name)
    os.execv(path, [name] + sys.argv[1:])


def dispatcher():
    _run("gt-dispatcher")


def worker():
    _run("gt-worker")


def opt():
    _run("gt-opt")
