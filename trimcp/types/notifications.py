"""Params of the notifications every session uses: progress and cancellation.

Notifications without params of their own (``notifications/initialized``, the
``list_changed`` ones) use :class:`trimcp.types.common.NotificationParams`.
"""

import attrs

from trimcp.types.common import NotificationParams, ProgressToken, RequestId


@attrs.frozen(kw_only=True, repr=False, eq=False)
class ProgressNotificationParams(NotificationParams):
    """Params of ``notifications/progress``; ``progress`` increases on every notification."""

    progress_token: ProgressToken
    progress: float
    total: float | None = None
    message: str | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class CancelledNotificationParams(NotificationParams):
    """Params of ``notifications/cancelled``.

    ``request_id`` is optional in 2025-11-25 only (tasks are cancelled with
    ``tasks/cancel``); every other revision requires it.
    """

    request_id: RequestId | None = None
    reason: str | None = None
