"""The one weights= value gt.vision.models supports: None (no downloads)."""


def check_no_weights(name, weights, kwargs):
    """Raises ValueError unless `weights` is None (and the old `pretrained=` flag, if given, is
    false); removes `pretrained` from `kwargs`."""
    pretrained = kwargs.pop("pretrained", False)
    if weights is None and not pretrained:
        return
    raise ValueError(
        f"{name}: GT does not download pretrained weights (weights={weights!r}"
        f"{', pretrained=True' if pretrained else ''}); build it with weights=None and load a state dict "
        f"you have: model.load_state_dict(gt.load(path))")
