"""Logging: ``logging/setLevel`` and ``notifications/message``."""

from typing import Any, Literal, TypeAlias

import attrs

from trimcp.types.common import NotificationParams, RequestParams

LoggingLevel: TypeAlias = Literal[
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
]
"""Syslog severities (RFC 5424), from least to most severe."""

LOGGING_LEVELS: tuple[LoggingLevel, ...] = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)
"""Every :data:`LoggingLevel`, ordered from least to most severe."""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class SetLevelRequestParams(RequestParams):
    """Params of ``logging/setLevel``: the least severe level the client wants to receive."""

    level: LoggingLevel


@attrs.frozen(kw_only=True, repr=False, eq=False)
class LoggingMessageNotificationParams(NotificationParams):
    """Params of ``notifications/message``. ``data`` is any JSON value and always sent."""

    level: LoggingLevel
    data: Any
    logger: str | None = None
