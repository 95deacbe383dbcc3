"""The forward bank generator: domain templates x capability axes, grown world by world, gate-certified."""

from apiflow.authoring.generate.build import build_bank, grow_world
from apiflow.authoring.generate.library import DOMAINS
from apiflow.authoring.generate.plan import AXIS_ORDER, V1_SEED, bank_shape

__all__ = ["AXIS_ORDER", "DOMAINS", "V1_SEED", "bank_shape", "build_bank", "grow_world"]
