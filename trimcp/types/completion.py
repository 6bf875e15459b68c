"""Completion: argument autocompletion for prompts and resource templates."""

from typing import Literal, TypeAlias

import attrs

from trimcp.types.base import WireType
from trimcp.types.common import RequestParams, Result


@attrs.frozen(kw_only=True, repr=False, eq=False)
class PromptReference(WireType):
    """Identifies a prompt whose argument is being completed."""

    type: Literal["ref/prompt"] = "ref/prompt"
    name: str
    title: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ResourceTemplateReference(WireType):
    """Identifies a resource template whose variable is being completed."""

    type: Literal["ref/resource"] = "ref/resource"
    uri: str


CompletionReference: TypeAlias = PromptReference | ResourceTemplateReference
"""What a completion request is about; told apart by ``type``."""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class CompletionArgument(WireType):
    """The argument being completed and its partial value."""

    name: str
    value: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class CompletionContext(WireType):
    """Context for a completion: arguments (or template variables) already resolved."""

    arguments: dict[str, str] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class CompleteRequestParams(RequestParams):
    """Params of ``completion/complete``."""

    ref: CompletionReference
    argument: CompletionArgument
    context: CompletionContext | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Completion(WireType):
    """Completion values (at most 100), with the total and whether there are more."""

    values: list[str]
    total: int | None = None
    has_more: bool | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class CompleteResult(Result):
    """The result of ``completion/complete``."""

    completion: Completion
