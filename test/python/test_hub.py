"""gt.hub (torch.hub): hubconf entry points from a folder and from the cache of a GitHub
repository, and checkpoints by URL (file:// URLs: no network here)."""
import hashlib
import os

import numpy as np
import pytest

import gt

HUBCONF = '''
dependencies = ["numpy"]
import gt


def tiny(width=3):
    """A tiny model: Linear(2, width)."""
    return gt.nn.Linear(2, width)


def _helper():
    pass
'''


@pytest.fixture
def hub_dir(tmp_path):
    gt.hub.set_dir(str(tmp_path / "hub"))
    yield tmp_path / "hub"
    gt.hub._hub_dir = None


def test_a_local_hubconf(tmp_path, hub_dir):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "hubconf.py").write_text(HUBCONF)
    assert gt.hub.list(str(repo), source="local") == ["tiny"]
    assert gt.hub.help(str(repo), "tiny", source="local").startswith("A tiny model")
    model = gt.hub.load(str(repo), "tiny", width=5, source="local")
    assert isinstance(model, gt.nn.Linear) and model.weight.shape == (5, 2)
    with pytest.raises(RuntimeError, match="Cannot find callable missing in hubconf"):
        gt.hub.load(str(repo), "missing", source="local")
    (repo / "hubconf.py").write_text('dependencies = ["no_such_module_here"]\n')
    with pytest.raises(RuntimeError, match="Missing dependencies: no_such_module_here"):
        gt.hub.load(str(repo), "tiny", source="local")
    with pytest.raises(ValueError, match="Unknown source"):
        gt.hub.load(str(repo), "tiny", source="ftp")


def test_a_cached_github_repository_loads_without_the_network(hub_dir):
    cached = hub_dir / "someone_models_main"
    cached.mkdir(parents=True)
    (cached / "hubconf.py").write_text(HUBCONF)
    model = gt.hub.load("someone/models", "tiny", trust_repo=True, verbose=False)
    assert model.weight.shape == (3, 2)
    assert "someone/models" in (hub_dir / "trusted_list").read_text().split()
    other = hub_dir / "stranger_code_v1"
    other.mkdir()
    (other / "hubconf.py").write_text(HUBCONF)
    with pytest.raises(RuntimeError, match="stranger/code is not trusted"):
        gt.hub.load("stranger/code:v1", "tiny", trust_repo=False)
    with pytest.raises(ValueError, match="repo_owner/repo_name"):
        gt.hub.load("not-a-repo", "tiny")


def test_load_state_dict_from_url_downloads_once_and_checks_the_hash(tmp_path, hub_dir):
    state = {"w": gt.tensor(np.arange(6, dtype=np.float32).reshape(2, 3)), "step": 7}
    src = tmp_path / "src.pth"
    gt.save(state, str(src))
    digest = hashlib.sha256(src.read_bytes()).hexdigest()
    good = tmp_path / f"model-{digest[:8]}.pth"
    os.rename(src, good)
    loaded = gt.hub.load_state_dict_from_url(good.as_uri(), check_hash=True, progress=False)
    assert loaded["step"] == 7 and loaded["w"].numpy().tolist() == [[0, 1, 2], [3, 4, 5]]
    assert (hub_dir / "checkpoints" / good.name).exists()
    os.remove(good)  # the cached copy serves from now on
    assert gt.hub.load_state_dict_from_url(good.as_uri(), progress=False)["step"] == 7
    bad = tmp_path / "model-00000000.pth"
    gt.save(state, str(bad))
    with pytest.raises(RuntimeError, match="invalid hash value"):
        gt.hub.load_state_dict_from_url(bad.as_uri(), check_hash=True, progress=False)
    assert not (hub_dir / "checkpoints" / bad.name).exists()
    with pytest.raises(RuntimeError, match="downloading file:.*failed"):
        gt.hub.download_url_to_file((tmp_path / "absent.pth").as_uri(), str(tmp_path / "x.pth"), progress=False)
