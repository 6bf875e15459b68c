"""Sampling: ``sampling/createMessage``, where a server asks the client's LLM for a message."""

from typing import Any, Literal, TypeAlias

import attrs

from trimcp.types.base import WireType
from trimcp.types.common import Result, Role
from trimcp.types.content import SamplingContent
from trimcp.types.tasks import TaskAugmentedRequestParams
from trimcp.types.tools import Tool

SamplingMessageContent: TypeAlias = SamplingContent | list[SamplingContent]
"""The content of a sampling message: one block, or (from 2025-11-25) a list of blocks."""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ModelHint(WireType):
    """A hint for model selection: a (sub)string of a model name, e.g. ``"sonnet"``."""

    name: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ModelPreferences(WireType):
    """The server's model preferences; priorities are from 0 (unimportant) to 1."""

    hints: list[ModelHint] | None = None
    cost_priority: float | None = None
    speed_priority: float | None = None
    intelligence_priority: float | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ToolChoice(WireType):
    """How the model may use the offered tools (the default is ``auto``)."""

    mode: Literal["auto", "required", "none"] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class SamplingMessage(WireType):
    """A message of the conversation to sample from."""

    role: Role
    content: SamplingMessageContent
    meta: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class CreateMessageRequestParams(TaskAugmentedRequestParams):
    """Params of ``sampling/createMessage``.

    ``tools``/``tool_choice`` need the client's ``sampling.tools`` capability;
    ``include_context`` other than ``"none"`` needs ``sampling.context``.
    """

    messages: list[SamplingMessage]
    max_tokens: int
    model_preferences: ModelPreferences | None = None
    system_prompt: str | None = None
    include_context: Literal["none", "thisServer", "allServers"] | None = None
    temperature: float | None = None
    stop_sequences: list[str] | None = None
    metadata: dict[str, Any] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class CreateMessageResult(Result):
    """The result of ``sampling/createMessage``: the sampled message and the model used."""

    role: Role
    content: SamplingMessageContent
    model: str
    stop_reason: str | None = None
