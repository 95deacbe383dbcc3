"""Models: the ModelClient protocol, offline models and the litellm adapter."""

from apiflow.models.base import GenerateConfig, ModelClient, ModelOutput, ProviderError, ToolCall, Usage
from apiflow.models.registry import (
    OFFLINE_MODELS,
    OFFLINE_PROFILES,
    check_model_name,
    is_offline,
    make_model,
    model_slug,
)

__all__ = [
    "OFFLINE_MODELS",
    "OFFLINE_PROFILES",
    "GenerateConfig",
    "ModelClient",
    "ModelOutput",
    "ProviderError",
    "ToolCall",
    "Usage",
    "check_model_name",
    "is_offline",
    "make_model",
    "model_slug",
]
