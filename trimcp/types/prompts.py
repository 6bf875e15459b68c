"""Prompts: ``prompts/list`` and ``prompts/get``."""

from typing import Any, Literal

import attrs

from trimcp.types.base import WireType
from trimcp.types.common import Icon, PaginatedResult, RequestParams, Result, Role
from trimcp.types.content import ContentBlock


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PromptArgument(WireType):
    """An argument a prompt template accepts."""

    name: str
    title: str | None = None
    description: str | None = None
    required: bool | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Prompt(WireType):
    """A prompt or prompt template the server offers."""

    name: str
    title: str | None = None
    description: str | None = None
    arguments: list[PromptArgument] | None = None
    icons: list[Icon] | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PromptMessage(WireType):
    """One message of a prompt returned by ``prompts/get``."""

    role: Role
    content: ContentBlock


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ListPromptsResult(PaginatedResult):
    """The result of ``prompts/list``. ``ttl_ms``/``cache_scope`` exist only from 2026-07-28."""

    prompts: list[Prompt]
    ttl_ms: int | None = None
    cache_scope: Literal["public", "private"] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class GetPromptRequestParams(RequestParams):
    """Params of ``prompts/get``. ``input_responses``/``request_state``: 2026-07-28 only."""

    name: str
    arguments: dict[str, str] | None = None
    input_responses: dict[str, Any] | None = None
    request_state: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class GetPromptResult(Result):
    """The result of ``prompts/get``."""

    messages: list[PromptMessage]
    description: str | None = None
