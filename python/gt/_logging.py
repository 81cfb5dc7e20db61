"""torch._logging: `set_logs(**settings)`, which scripts call to quiet or raise torch.compile's
logging, is accepted and changes nothing (GT's compiler logs through gt.debug and the trace)."""


def set_logs(**kwargs):
    """Accepted; nothing to configure."""
