"""Run a PyTorch script on GT unchanged: `import torch` (and `torch.nn`, `torch.optim`, ...)
imports GT's module of the same name, `import torchvision` imports gt.vision, `import
functorch` gt.functorch and `import safetensors.torch` gt._safetensors_torch.

    python -m gt.as_torch train.py --steps 100    # runs train.py with torch meaning gt

or, in a script or notebook, before anything imports torch:

    import gt.as_torch  # noqa: F401

`sys.modules["torch"] = gt` alone is not enough: `import torch.optim` would then load GT's
optim package a second time under the name torch.optim, with its own copy of gt.autograd, whose
no_grad() the tensors never see. Here every `torch.X` is GT's `gt.X` module itself, imported
on first use; a torch module GT does not have raises ModuleNotFoundError naming it.
"""
import importlib
import importlib.abc
import importlib.metadata
import importlib.util
import os
import runpy
import sys

import gt


_PACKAGES = {"torch": "gt", "torchvision": "gt.vision", "functorch": "gt.functorch"}  # a PyTorch package -> GT's
# Modules of other packages written against PyTorch's internals, replaced by GT's own
_MODULES = {"safetensors.torch": "gt._safetensors_torch"}


def _gt_name(name):
    """GT's module for `name` (torch.X -> gt.X, torchvision.X -> gt.vision.X), or None."""
    if name in _MODULES:
        return _MODULES[name]
    for package, real in _PACKAGES.items():
        if name == package or name.startswith(package + "."):
            return real + name[len(package):]
    return None


class _TorchIsGT(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds `torch` and `torch.X` as `gt` and `gt.X`, and `torchvision` as `gt.vision`."""

    def find_spec(self, name, path=None, target=None):
        if name == "torch.vision" or name.startswith("torch.vision."):
            # gt.vision is torchvision; PyTorch has no torch.vision (and Python's own finders
            # would otherwise find gt/vision through torch's path, which is gt's)
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        real = _gt_name(name)
        if real is None:
            return None
        if real not in sys.modules and importlib.util.find_spec(real) is None:
            return None  # ModuleNotFoundError: No module named 'torch.X'
        return importlib.util.spec_from_loader(name, self)

    def find_distributions(self, context=None):
        """importlib.metadata's view of `torch` (and torchvision) is GT's distribution under
        that name, with the version the package reports: `importlib.metadata.version("torch")`
        is torch.__version__ (notebooks print it; libraries test it)."""
        metadata = importlib.metadata
        name = getattr(context, "name", None)
        if name not in _PACKAGES:
            return iter(())
        try:
            return iter([_Renamed(metadata.distribution("gt"), name)])
        except metadata.PackageNotFoundError:  # GT run from a source tree without pip's metadata
            return iter(())

    def create_module(self, spec):
        return importlib.import_module(_gt_name(spec.name))

    def exec_module(self, module):
        pass  # imported already, as gt.X


class _Renamed(importlib.metadata.Distribution):
    """GT's distribution seen as `name` (torch, torchvision): its METADATA's Name and Version
    are that package's."""

    def __init__(self, dist, name):
        self._dist, self._name = dist, name

    def read_text(self, filename):
        text = self._dist.read_text(filename)
        if filename in ("METADATA", "PKG-INFO") and text is not None:
            version = importlib.import_module(_PACKAGES[self._name]).__version__
            lines = [f"Name: {self._name}" if line.startswith("Name:") else
                     f"Version: {version}" if line.startswith("Version:") else line for line in text.splitlines()]
            text = "\n".join(lines) + "\n"
        return text

    def locate_file(self, path):
        return self._dist.locate_file(path)


def _child_command_line(original):
    """multiprocessing.spawn.get_command_line for a process whose children must see `torch` as
    GT too: a 'spawn' (or 'forkserver') child starts a fresh interpreter that runs the parent's
    main script again (torch.multiprocessing scripts such as pytorch/examples' mnist_hogwild);
    its -c program installs this module first. A forked child inherits the finder."""
    def get_command_line(**kwds):
        cmd = list(original(**kwds))
        if "-c" in cmd:
            i = cmd.index("-c") + 1
            cmd[i] = "import gt.as_torch; " + cmd[i]
        return cmd
    get_command_line._gt_as_torch = True
    return get_command_line


def _preload_in_forkserver():
    """A 'forkserver' child forks from a server process started with its own command line
    (multiprocessing.forkserver), which imports only its preload modules: this module is made
    one of them, also after set_forkserver_preload (stable-baselines3's SubprocVecEnv uses
    forkserver on Linux). multiprocessing keeps the list in a private attribute."""
    from multiprocessing import forkserver
    server = getattr(forkserver, "_forkserver", None)
    preload = getattr(server, "_preload_modules", None)
    if preload is None:
        return
    if "gt.as_torch" not in preload:
        server._preload_modules = list(preload) + ["gt.as_torch"]
    setter = forkserver.ForkServer.set_forkserver_preload
    if not getattr(setter, "_gt_as_torch", False):
        def set_forkserver_preload(self, modules_names):
            names = list(modules_names)
            setter(self, names if "gt.as_torch" in names else names + ["gt.as_torch"])
        set_forkserver_preload._gt_as_torch = True
        forkserver.ForkServer.set_forkserver_preload = set_forkserver_preload


def _safetensors_through_gt():
    """safetensors.safe_open(path, framework="pt"), the reader transformers opens checkpoints
    with, reads through GT (gt._safetensors_torch.safe_open: safetensors' own "pt" reader
    maps files into PyTorch storages); other frameworks go to safetensors' own."""
    try:
        import safetensors
    except ImportError:
        return
    original = safetensors.safe_open
    if getattr(original, "_gt", False):
        return

    def safe_open(filename, framework, device="cpu", **kwargs):
        if framework in ("pt", "torch"):
            from . import _safetensors_torch
            return _safetensors_torch.safe_open(filename, framework, device, **kwargs)
        return original(filename, framework, device=device, **kwargs)
    safe_open._gt = True
    safetensors.safe_open = safe_open


def install():
    """Makes `torch` and every `torch.X` GT's module (idempotent), in this process and in the
    processes multiprocessing spawns from it; dtypes and shapes then print as PyTorch's
    (torch.float32, torch.Size([2, 3])) instead of gt.float32, gt.Size([2, 3])."""
    from . import dtypes, version
    dtypes.package[0] = "torch"
    # torch.__version__ is the PyTorch API GT follows, GT's own after the "+": scripts and
    # libraries test it (einx needs >= 2.2; "0.1.0" sent them down paths for PyTorch 1).
    if not isinstance(gt.__version__, version.TorchVersion):
        gt.__version__ = version.__version__ = version.TorchVersion(f"{version.TORCH_API}+gt{gt.__version__}")
        vision = sys.modules.get("gt.vision")  # (else gt.vision sets its own when imported)
        if vision is not None:
            vision.__version__ = version.torchvision_version()
    gt.Tensor.__module__ = "torch"  # type(x) prints <class 'torch.Tensor'>, as PyTorch's
    from gt import _complex  # a complex tensor's too (opt_einsum picks its backend by the module's name)
    _complex.ComplexTensor.__module__, _complex.ComplexTensor.__name__ = "torch", "Tensor"
    _complex.ComplexTensor.__qualname__ = "Tensor"
    gt.nn.Parameter.__module__ = "torch.nn.parameter"
    gt.__name__ = "torch"  # (pyro checks `target.split(".")[0] == torch.__name__` before patching torch's names)
    # transformers loads checkpoints in a thread pool; GT's client takes one thread's calls at a
    # time (docs/api.md), so from_pretrained loads them in turn
    os.environ.setdefault("HF_DEACTIVATE_ASYNC_LOAD", "1")
    if not any(isinstance(f, _TorchIsGT) for f in sys.meta_path):
        sys.meta_path.insert(0, _TorchIsGT())
    _safetensors_through_gt()
    import multiprocessing.spawn as spawn
    if not getattr(spawn.get_command_line, "_gt_as_torch", False):
        spawn.get_command_line = _child_command_line(spawn.get_command_line)
    _preload_in_forkserver()
    for name, module in list(sys.modules.items()):
        if name == "gt.vision" or name.startswith("gt.vision."):
            sys.modules.setdefault("torchvision" + name[len("gt.vision"):], module)
        elif name == "gt.functorch":
            sys.modules.setdefault("functorch", module)
        elif name == "gt" or name.startswith("gt."):
            sys.modules.setdefault("torch" + name[len("gt"):], module)


install()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m gt.as_torch SCRIPT [ARGS...] | -c CODE [ARGS...] | -m MODULE [ARGS...]: runs it with "
              "`import torch` meaning GT")
        return 0 if argv else 2
    if argv[0] == "-c" and len(argv) > 1:  # as `python -c CODE`
        sys.argv = ["-c"] + argv[2:]
        sys.path[0] = ""
        exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
        return 0
    if argv[0] == "-m" and len(argv) > 1:  # as `python -m MODULE`
        sys.argv = [argv[1]] + argv[2:]
        sys.path[0] = os.getcwd()
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        return 0
    if not os.path.exists(argv[0]):  # as `python script.py` says it
        print(f"{os.path.basename(sys.executable)}: can't open file {os.path.abspath(argv[0])!r}: "
              f"[Errno 2] No such file or directory", file=sys.stderr)
        return 2
    sys.argv = argv
    sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))  # as `python script.py`: its folder, not the cwd
    runpy.run_path(os.path.abspath(argv[0]), run_name="__main__")  # (__file__ absolute, as python's)
    return 0


if __name__ == "__main__":
    sys.exit(main())
