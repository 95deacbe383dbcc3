"""Models: the ModelClient protocol, offline models, plug-ins and the litellm adapter.

The names below are the public, stable plug-in API (docs/plugins.md): a plug-in implements
``ModelClient`` and returns ``ModelOutput`` (with ``ToolCall``s and ``Usage``) from ``generate``;
it may raise ``ProviderError`` when a service it calls gives up.
"""

from apiflow.models.base import GenerateConfig, ModelClient, ModelOutput, ProviderError, ToolCall, Usage
from apiflow.models.plugins import GROUP as PLUGIN_GROUP
from apiflow.models.plugins import PluginError, installed_plugins, is_plugin
from apiflow.models.registry import (
    OFFLINE_MODELS,
    OFFLINE_PROFILES,
    check_model_name,
    is_offline,
    make_model,
    model_prices,
    model_slug,
    uses_litellm,
)

__all__ = [
    "OFFLINE_MODELS",
    "OFFLINE_PROFILES",
    "PLUGIN_GROUP",
    "GenerateConfig",
    "ModelClient",
    "ModelOutput",
    "PluginError",
    "ProviderError",
    "ToolCall",
    "Usage",
    "check_model_name",
    "installed_plugins",
    "is_offline",
    "is_plugin",
    "make_model",
    "model_prices",
    "model_slug",
    "uses_litellm",
]
