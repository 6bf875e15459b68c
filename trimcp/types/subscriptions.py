"""2026-07-28 subscriptions: ``subscriptions/listen`` and its acknowledgement.

Types only; no revision before 2026-07-28 has these messages.
"""

import attrs

from trimcp.types.base import WireType
from trimcp.types.common import NotificationParams, RequestParams, Result


@attrs.frozen(kw_only=True, repr=False, eq=False)
class SubscriptionFilter(WireType):
    """The notifications a client opts in to on a listen stream."""

    tools_list_changed: bool | None = None
    prompts_list_changed: bool | None = None
    resources_list_changed: bool | None = None
    resource_subscriptions: list[str] | None = None


@attrs.frozen(kw_only=True, repr=False, eq=False)
class SubscriptionsListenRequestParams(RequestParams):
    """Params of ``subscriptions/listen``."""

    notifications: SubscriptionFilter


@attrs.frozen(kw_only=True, repr=False, eq=False)
class SubscriptionsListenResult(Result):
    """The result of ``subscriptions/listen``: the stream ended gracefully."""


@attrs.frozen(kw_only=True, repr=False, eq=False)
class SubscriptionsAcknowledgedNotificationParams(NotificationParams):
    """Params of ``notifications/subscriptions/acknowledged``: what the server will send."""

    notifications: SubscriptionFilter
