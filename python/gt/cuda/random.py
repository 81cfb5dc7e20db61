"""torch.cuda.random: the seeding and generator-state functions of gt.cuda (GT has one stream of
draws for every device: see gt.cuda.manual_seed)."""
from . import (get_rng_state, get_rng_state_all, initial_seed, manual_seed, manual_seed_all, seed, seed_all,  # noqa: F401
               set_rng_state, set_rng_state_all)

__all__ = ["get_rng_state", "get_rng_state_all", "set_rng_state", "set_rng_state_all", "manual_seed",
           "manual_seed_all", "seed", "seed_all", "initial_seed"]
