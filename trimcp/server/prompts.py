"""Prompts: a function whose parameters are the prompt's arguments.

Arguments arrive as strings; a parameter may declare ``str``, ``int``, ``float``, ``bool``,
a ``Literal``/``Enum`` of strings, or an optional one of these (see
:mod:`trimcp.server.textargs`). A parameter without a default is a required argument;
descriptions come from ``Annotated[str, "..."]`` or the docstring's ``Args:`` section.

The function returns a ``str`` (one user message), a :class:`PromptMessage`, a content
block (a user message holding it), a dict in the wire form of a message
(``{"role": ..., "content": {...}}``), a list of these, or a whole ``GetPromptResult``.

Errors: an unknown prompt, a missing required argument or a value of the wrong type is
``-32602``; an ``McpError`` from the function is answered as is; any other exception is
logged and answered ``-32603`` with a message naming only the prompt.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from trimcp import serde
from trimcp.errors import INTERNAL_ERROR, INVALID_PARAMS, McpError
from trimcp.server.context import Context
from trimcp.server.convert import ValidationError
from trimcp.server.registry import FunctionHandle
from trimcp.server.signature import call, inspect_function, param_error
from trimcp.server.textargs import choices_of, text_converter
from trimcp.server.tools import icon_list
from trimcp.types import (
    AudioContent,
    ContentBlock,
    EmbeddedResource,
    GetPromptResult,
    Icon,
    ImageContent,
    Prompt,
    PromptArgument,
    PromptMessage,
    ResourceLink,
    TextContent,
)

logger = logging.getLogger("trimcp.server")

_BLOCKS = (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)


def user_message(content: str | ContentBlock) -> PromptMessage:
    """A user message; a string becomes a text block."""
    return PromptMessage(role="user", content=_content(content))


def assistant_message(content: str | ContentBlock) -> PromptMessage:
    """An assistant message; a string becomes a text block."""
    return PromptMessage(role="assistant", content=_content(content))


def _content(content: str | ContentBlock) -> ContentBlock:
    return TextContent(text=content) if isinstance(content, str) else content


class RegisteredPrompt(FunctionHandle[..., Any]):
    """A prompt registered on a server."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: Sequence[Icon | Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> None:
        self.fn = fn
        self.info = inspect_function(fn, what="prompt")
        self.name = name or self.info.name
        self._converters = {}
        for param in self.info.params:
            try:
                # A prompt argument is one string: list[str] fits only template variables.
                convert = text_converter(param.annotation, allow_list=False)
            except TypeError as exc:
                raise param_error(f"Prompt {self.name!r}", param.name, exc) from None
            self._converters[param.name] = convert
        self._choices = {p.name: choices_of(p.annotation) for p in self.info.params}
        self._prompt = Prompt(
            name=self.name,
            title=title,
            description=description if description is not None else self.info.summary,
            arguments=[
                PromptArgument(name=p.name, description=p.description, required=p.required)
                for p in self.info.params
            ]
            or None,
            icons=icon_list(icons),
            meta=dict(meta) if meta is not None else None,
        )

    def __repr__(self) -> str:
        return f"<RegisteredPrompt {self.name!r}>"

    def definition(self) -> Prompt:
        return self._prompt

    def choices(self, argument: str) -> list[str] | None:
        """The values a ``Literal``/``Enum`` argument allows (used for completion)."""
        return self._choices.get(argument)

    async def get(self, arguments: Mapping[str, str] | None, ctx: Context) -> GetPromptResult:
        """Render the prompt. Cancellation: whatever the function does."""
        arguments = arguments or {}
        kwargs: dict[str, Any] = {}
        for param in self.info.params:
            if param.name in arguments:
                try:
                    kwargs[param.name] = self._converters[param.name](arguments[param.name])
                except ValidationError as exc:
                    raise McpError(
                        INVALID_PARAMS,
                        f"Invalid argument {param.name!r} for prompt {self.name!r}: {exc}",
                        {"argument": param.name, "reason": exc.reason},
                    ) from None
            elif param.required:
                raise McpError(
                    INVALID_PARAMS,
                    f"Missing required argument {param.name!r} for prompt {self.name!r}",
                    {"argument": param.name},
                )
        if self.info.context_param is not None:
            kwargs[self.info.context_param] = ctx
        try:
            value = await call(self.info, kwargs)
            if isinstance(value, GetPromptResult):
                return value
            return GetPromptResult(
                messages=prompt_messages(value), description=self._prompt.description
            )
        except McpError:
            raise
        except Exception:
            logger.exception("prompt %r failed", self.name)
            raise McpError(INTERNAL_ERROR, f"Error rendering prompt {self.name!r}") from None


def prompt_messages(value: Any) -> list[PromptMessage]:
    """The messages for what a prompt function returned. Raises ``TypeError``/``ShapeError``."""
    items = value if isinstance(value, list | tuple) else [value]
    return [_message(item) for item in items]


def _message(item: Any) -> PromptMessage:
    if isinstance(item, PromptMessage):
        return item
    if isinstance(item, (str, *_BLOCKS)):
        return user_message(item)
    if isinstance(item, dict):
        return serde.structure(item, PromptMessage)
    raise TypeError(f"A prompt cannot return {type(item).__name__} as a message")
