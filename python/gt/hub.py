"""torch.hub: load models from a repository's hubconf.py, and checkpoints by URL.

    model = gt.hub.load("owner/repo:branch", "resnet18", weights=None)   # from GitHub, cached
    model = gt.hub.load("/path/to/repo", "mymodel", source="local")      # a folder with hubconf.py
    state = gt.hub.load_state_dict_from_url("https://.../model.pth")      # downloaded once, cached

As PyTorch's: a repository is downloaded once (GitHub's zipball of the branch, tag or commit)
into get_dir() as OWNER_REPO_REF and imported from there; its hubconf.py's public callables are
the entry points (list, help, load), and its `dependencies` list names modules that must import.
A hubconf that does `import torch` needs torch to mean gt (`python -m gt.as_torch`, or
`import gt.as_torch` first). Checkpoints go to get_dir()/checkpoints and are read with gt.load
(which reads torch.save's zip files); check_hash compares the SHA-256 prefix in the file name
(NAME-HASH.ext), as PyTorch does.

The hub directory: set_dir(path), else $GT_HUB_DIR, else $XDG_CACHE_HOME/gt/hub (~/.cache/gt/hub).
Errors: RuntimeError for an entry point hubconf.py lacks, a missing dependency, an untrusted
repository in a non-interactive run (trust_repo=False), a hash mismatch or a failed download
(naming the URL).
"""
import hashlib
import importlib.util
import os
import re
import shutil
import sys
import tempfile
import urllib.request
import zipfile

__all__ = ["get_dir", "set_dir", "load", "list", "help", "load_state_dict_from_url", "download_url_to_file"]

_hub_dir = None
_HASH = re.compile(r"-([a-f0-9]*)\.")  # NAME-HASHPREFIX.ext
HASH_REGEX = _HASH  # (PyTorch's name, which libraries import)
from urllib.parse import urlparse  # noqa: E402,F401  (torch.hub re-exports it; timm imports it from there)


def get_dir():
    """The folder repositories and checkpoints are cached in."""
    if _hub_dir is not None:
        return _hub_dir
    if os.environ.get("GT_HUB_DIR"):
        return os.path.expanduser(os.environ["GT_HUB_DIR"])
    cache = os.environ.get("XDG_CACHE_HOME", os.path.join("~", ".cache"))
    return os.path.expanduser(os.path.join(cache, "gt", "hub"))


def __getattr__(name):
    """torch.hub.tqdm: tqdm's progress bar, which torch.hub re-exports (torchio imports it from
    there); tqdm is imported on first use (an optional dependency of GT's)."""
    if name == "tqdm":
        from tqdm import tqdm
        return tqdm
    raise AttributeError(f"module 'gt.hub' has no attribute {name!r}")


def _get_torch_home():
    """The folder above get_dir()'s hub folder (torch.hub._get_torch_home, which libraries put
    their own caches under)."""
    return os.path.dirname(get_dir())


def set_dir(d):
    """Caches repositories and checkpoints in `d` from now on."""
    global _hub_dir
    _hub_dir = os.path.expanduser(str(d))


def _parse_repo(github):
    owner_name, _, ref = github.partition(":")
    if owner_name.count("/") != 1 or not all(owner_name.split("/")):
        raise ValueError(f'Invalid input: repo_or_dir should be of the form "repo_owner/repo_name[:ref]", got {github!r}')
    owner, name = owner_name.split("/")
    return owner, name, ref or "main"


def download_url_to_file(url, dst, hash_prefix=None, progress=True):
    """Downloads `url` to the file `dst` (through a temporary file in its folder, renamed at the
    end). Raises RuntimeError if the download fails or the SHA-256 does not start with
    hash_prefix."""
    folder = os.path.dirname(os.path.abspath(dst))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, suffix=".partial")
    sha = hashlib.sha256()
    try:
        try:
            with urllib.request.urlopen(url) as response, os.fdopen(fd, "wb") as out:
                total = int(response.headers.get("Content-Length") or 0) or None
                bar = _progress(total, progress)
                while True:
                    chunk = response.read(1 << 16)
                    if not chunk:
                        break
                    out.write(chunk)
                    sha.update(chunk)
                    if bar is not None:
                        bar.update(len(chunk))
                if bar is not None:
                    bar.close()
        except OSError as e:
            raise RuntimeError(f"gt.hub: downloading {url} failed: {e}") from e
        if hash_prefix is not None and not sha.hexdigest().startswith(hash_prefix):
            raise RuntimeError(f'invalid hash value (expected "{hash_prefix}", got "{sha.hexdigest()}") for {url}')
        os.replace(tmp, dst)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _progress(total, enabled):
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr)


def _repo_dir(github, force_reload, trust_repo, verbose):
    owner, name, ref = _parse_repo(github)
    hub = get_dir()
    os.makedirs(hub, exist_ok=True)
    folder = os.path.join(hub, "_".join((owner, name, ref.replace("/", "_"))))
    _check_trust(f"{owner}/{name}", trust_repo, hub)
    if os.path.exists(folder) and not force_reload:
        if verbose:
            print(f"Using cache found in {folder}", file=sys.stderr)
        return folder
    url = f"https://github.com/{owner}/{name}/zipball/{ref}"
    archive = os.path.join(hub, f"{ref.replace('/', '_')}.zip")
    if verbose:
        print(f'Downloading: "{url}" to {archive}', file=sys.stderr)
    download_url_to_file(url, archive, progress=False)
    try:
        with zipfile.ZipFile(archive) as z:
            top = z.namelist()[0].split("/")[0]
            z.extractall(hub)
    finally:
        os.remove(archive)
    shutil.rmtree(folder, ignore_errors=True)
    shutil.move(os.path.join(hub, top), folder)
    return folder


def _check_trust(repo, trust_repo, hub):
    """trust_repo: True trusts (and remembers) it; False refuses a repository not trusted before;
    "check" asks unless trusted before; None (PyTorch's default today) trusts it with a warning."""
    path = os.path.join(hub, "trusted_list")
    trusted = set(open(path).read().split()) if os.path.exists(path) else set()
    owner = repo.split("/")[0]
    if repo in trusted or owner in ("pytorch", "facebookresearch"):
        return
    if trust_repo is False:
        raise RuntimeError(f"gt.hub: the repository {repo} is not trusted (pass trust_repo=True to trust it)")
    if trust_repo == "check":
        answer = input(f"The repository {repo} does not belong to the list of trusted repositories. "
                       "Do you trust this repository and wish to add it to the trusted list? (y/N)")
        if answer.strip().lower() not in ("y", "yes"):
            raise RuntimeError(f"gt.hub: the repository {repo} is not trusted")
    elif trust_repo is None:
        import warnings
        warnings.warn(f"You are about to download and run code from an untrusted repository ({repo}). Pass "
                      "trust_repo=True to trust it from now on.", stacklevel=4)
        return
    with open(path, "a") as f:
        f.write(repo + "\n")


def _hubconf(folder):
    path = os.path.join(folder, "hubconf.py")
    if not os.path.exists(path):
        raise RuntimeError(f"gt.hub: {folder} has no hubconf.py")
    sys.path.insert(0, folder)  # hubconf imports the repository's own modules
    try:
        spec = importlib.util.spec_from_file_location("hubconf", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(folder)
    missing = [d for d in getattr(module, "dependencies", []) if importlib.util.find_spec(d) is None]
    if missing:
        raise RuntimeError(f"Missing dependencies: {', '.join(missing)}")
    return module


def _folder(repo_or_dir, source, force_reload, trust_repo, verbose):
    if source not in ("github", "local"):
        raise ValueError(f'Unknown source: "{source}". Allowed values: "github" | "local".')
    if source == "local":
        return os.path.abspath(os.path.expanduser(repo_or_dir))
    return _repo_dir(repo_or_dir, force_reload, trust_repo, verbose)


def _entry(module, model):
    fn = getattr(module, model, None) if isinstance(model, str) and not model.startswith("_") else None
    if not callable(fn):
        raise RuntimeError(f"Cannot find callable {model} in hubconf")
    return fn


def list(github, force_reload=False, skip_validation=False, trust_repo=None, verbose=True, source="github"):
    """The entry points of a repository's hubconf.py (its public callables)."""
    module = _hubconf(_folder(github, source, force_reload, trust_repo, verbose))
    return [name for name in dir(module) if callable(getattr(module, name)) and not name.startswith("_")]


def help(github, model, force_reload=False, skip_validation=False, trust_repo=None, source="github"):
    """The docstring of entry point `model`."""
    return _entry(_hubconf(_folder(github, source, force_reload, trust_repo, False)), model).__doc__


def load(repo_or_dir, model, *args, source="github", trust_repo=None, force_reload=False, verbose=True,
         skip_validation=False, **kwargs):
    """Entry point `model` of the repository (source="github": "owner/repo[:ref]", downloaded
    once) or folder (source="local") called with *args and **kwargs: usually a model."""
    folder = _folder(repo_or_dir, source, force_reload, trust_repo, verbose)
    return _entry(_hubconf(folder), model)(*args, **kwargs)


def load_state_dict_from_url(url, model_dir=None, map_location=None, progress=True, check_hash=False, file_name=None,
                             weights_only=False):
    """gt.load of the checkpoint at `url`, downloaded once into model_dir (default
    get_dir()/checkpoints) as file_name (default the URL's last part). check_hash: the file
    name's NAME-HASH.ext prefix must start its SHA-256."""
    from .serialization import load as _load
    model_dir = model_dir or os.path.join(get_dir(), "checkpoints")
    os.makedirs(model_dir, exist_ok=True)
    name = file_name or os.path.basename(urllib.request.urlparse(url).path)
    cached = os.path.join(model_dir, name)
    if not os.path.exists(cached):
        print(f'Downloading: "{url}" to {cached}', file=sys.stderr)
        match = _HASH.search(name) if check_hash else None
        download_url_to_file(url, cached, match.group(1) if match else None, progress=progress)
    return _load(cached, map_location=map_location, weights_only=weights_only)
