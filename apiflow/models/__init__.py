"""Models: the ModelClient protocol, offline models and the litellm adapter."""

from apiflow.models.base import GenerateConfig, ModelClient, ModelOutput, ProviderError, ToolCall, Usage

__all__ = ["GenerateConfig", "ModelClient", "ModelOutput", "ProviderError", "ToolCall", "Usage"]
