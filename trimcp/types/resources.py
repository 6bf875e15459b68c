"""Resources: listing, templates, reading, subscriptions and update notifications.

The resource contents types live in :mod:`trimcp.types.content`, since embedded resources
use them too.
"""

from typing import Any, Literal

import attrs

from trimcp.types.base import WireType
from trimcp.types.common import (
    Annotations,
    Icon,
    NotificationParams,
    PaginatedResult,
    RequestParams,
    Result,
)
from trimcp.types.content import ResourceContents


@attrs.frozen(kw_only=True, repr=False, eq=False)
class Resource(WireType):
    """A resource the server can read."""

    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    size: int | None = None
    icons: list[Icon] | None = None
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ResourceTemplate(WireType):
    """A template (RFC 6570 URI template) for resources the server can read."""

    uri_template: str
    name: str
    title: str | None = None
    description: str | None = None
    mime_type: str | None = None
    icons: list[Icon] | None = None
    annotations: Annotations | None = None
    meta: dict[str, Any] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ListResourcesResult(PaginatedResult):
    """The result of ``resources/list``. ``ttl_ms``/``cache_scope``: 2026-07-28 only."""

    resources: list[Resource]
    ttl_ms: int | None = None
    cache_scope: Literal["public", "private"] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ListResourceTemplatesResult(PaginatedResult):
    """The result of ``resources/templates/list``. ``ttl_ms``/``cache_scope``: 2026-07-28."""

    resource_templates: list[ResourceTemplate]
    ttl_ms: int | None = None
    cache_scope: Literal["public", "private"] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ResourceRequestParams(RequestParams):
    """Params of a request about one resource."""

    uri: str


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ReadResourceRequestParams(ResourceRequestParams):
    """Params of ``resources/read``. ``input_responses``/``request_state``: 2026-07-28."""

    input_responses: dict[str, Any] | None = None
    request_state: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ReadResourceResult(Result):
    """The result of ``resources/read``. ``ttl_ms``/``cache_scope``: 2026-07-28 only."""

    contents: list[ResourceContents]
    ttl_ms: int | None = None
    cache_scope: Literal["public", "private"] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class SubscribeRequestParams(ResourceRequestParams):
    """Params of ``resources/subscribe``."""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class UnsubscribeRequestParams(ResourceRequestParams):
    """Params of ``resources/unsubscribe``."""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ResourceUpdatedNotificationParams(NotificationParams):
    """Params of ``notifications/resources/updated``."""

    uri: str
