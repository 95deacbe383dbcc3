"""Which published panel a model belongs to.

The paper's leaderboard is the original 19-model panel; five models were added by the
2026-07-31 board update. Models outside both lists (our own runs) get an empty panel.
"""

from __future__ import annotations

ORIGINAL_19 = "original-19"
BOARD_UPDATE = "board-update"

BOARD_UPDATE_MODELS = frozenset({"kimi-k3", "claude-fable-5", "gpt-5.6-luna", "gpt-5.6-sol", "minimax-m3"})

ORIGINAL_19_MODELS = frozenset(
    {
        "claude-haiku-4-5-20251001",
        "claude-opus-4-8",
        "claude-sonnet-4-6",
        "claude-sonnet-5",
        "deepseek-v4-flash",
        "deepseek-v4-pro",
        "glm-5p2",
        "gpt-5-mini",
        "gpt-5.4-mini",
        "gpt-5.5",
        "gpt-5.6-terra",
        "gpt-oss-120b",
        "gpt-oss-20b",
        "kimi-k2p5",
        "kimi-k2p6",
        "kimi-k2p7-code",
        "minimax-m2p7",
        "qwen3p6-plus",
        "qwen3p7-plus",
    }
)

PANELS = (ORIGINAL_19, BOARD_UPDATE)


def panel_of(model: str) -> str:
    """The published panel of a model slug, or ``""`` for a model outside the published corpus."""
    if model in BOARD_UPDATE_MODELS:
        return BOARD_UPDATE
    if model in ORIGINAL_19_MODELS:
        return ORIGINAL_19
    return ""
