"""The server framework: decorators, Context, and the low-level handler registry."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from trimcp import _attrs_cache

# A server starts here: cache the bytecode of trimcp's generated class methods before the
# framework's modules make their classes (trimcp/_attrs_cache.py; nothing outside trimcp).
_attrs_cache.install()

#: public name -> (module, name there); loaded on first use, so that importing one
#: module of the framework (or ``Server``) does not load every other one.
_EXPORTS: dict[str, tuple[str, str]] = {
    "Server": ("trimcp.server.app", "Server"),
    "MAX_COMPLETION_VALUES": ("trimcp.server.completion", "MAX_VALUES"),
    "Context": ("trimcp.server.context", "Context"),
    "ElicitationOutcome": ("trimcp.server.elicitation", "ElicitationOutcome"),
    "RegisteredPrompt": ("trimcp.server.prompts", "RegisteredPrompt"),
    "assistant_message": ("trimcp.server.prompts", "assistant_message"),
    "user_message": ("trimcp.server.prompts", "user_message"),
    "RegisteredResource": ("trimcp.server.resources", "RegisteredResource"),
    "RegisteredTemplate": ("trimcp.server.resources", "RegisteredTemplate"),
    "ResourceNotFound": ("trimcp.server.resources", "ResourceNotFound"),
    "Audio": ("trimcp.server.results", "Audio"),
    "Image": ("trimcp.server.results", "Image"),
    "AUTO": ("trimcp.server.tools", "AUTO"),
    "RegisteredTool": ("trimcp.server.tools", "RegisteredTool"),
    "ToolError": ("trimcp.server.tools", "ToolError"),
    "Field": ("trimcp.server.typeforms", "Field"),
    "PromptMessage": ("trimcp.types", "PromptMessage"),
}

if TYPE_CHECKING:
    from trimcp.server.app import Server as Server
    from trimcp.server.completion import MAX_VALUES as MAX_COMPLETION_VALUES
    from trimcp.server.context import Context as Context
    from trimcp.server.elicitation import ElicitationOutcome as ElicitationOutcome
    from trimcp.server.prompts import RegisteredPrompt as RegisteredPrompt
    from trimcp.server.prompts import assistant_message as assistant_message
    from trimcp.server.prompts import user_message as user_message
    from trimcp.server.resources import RegisteredResource as RegisteredResource
    from trimcp.server.resources import RegisteredTemplate as RegisteredTemplate
    from trimcp.server.resources import ResourceNotFound as ResourceNotFound
    from trimcp.server.results import Audio as Audio
    from trimcp.server.results import Image as Image
    from trimcp.server.tools import AUTO as AUTO
    from trimcp.server.tools import RegisteredTool as RegisteredTool
    from trimcp.server.tools import ToolError as ToolError
    from trimcp.server.typeforms import Field as Field
    from trimcp.types import PromptMessage as PromptMessage


def __getattr__(name: str) -> Any:
    found = _EXPORTS.get(name)
    if found is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(found[0]), found[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "AUTO",
    "MAX_COMPLETION_VALUES",
    "Audio",
    "Context",
    "ElicitationOutcome",
    "Field",
    "Image",
    "PromptMessage",
    "RegisteredPrompt",
    "RegisteredResource",
    "RegisteredTemplate",
    "RegisteredTool",
    "ResourceNotFound",
    "Server",
    "ToolError",
    "assistant_message",
    "user_message",
]
