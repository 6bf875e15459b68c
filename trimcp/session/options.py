"""The limits and timeouts of a session, in one value object with safe defaults."""

from __future__ import annotations

import math
from typing import Final

import attrs

from trimcp._record import Record
from trimcp._validators import optional_positive, positive

#: Defaults of the servers that hold many sessions (Streamable HTTP, WebSocket): at most
#: this many sessions at once, and a session with no traffic for this long is closed.
DEFAULT_MAX_SESSIONS: Final = 1000
DEFAULT_IDLE_TIMEOUT: Final = 30 * 60.0


@attrs.frozen(kw_only=True, repr=False, eq=False)
class SessionOptions(Record):
    """Every bound a session enforces. All times are in seconds (Trio clock).

    Outbound requests:
      ``request_timeout``: default time to wait for an answer (``math.inf``: no limit).
      ``max_request_timeout``: hard ceiling when progress notifications push the deadline out.
      ``cancel_notify_timeout``: how long a cancelled call may wait to queue its
      ``notifications/cancelled`` (it is sent shielded from the caller's cancellation).
    Inbound requests:
      ``max_in_flight``: handlers running at once; past it the session stops reading.
      ``handler_timeout``: optional deadline for each handler (answered with -32001).
    Buffers:
      ``outbox_size``: outgoing messages queued before senders wait (backpressure).
      ``notification_backlog``: inbound notifications queued for their handler.
    Shutdown (each step bounded; the whole close takes at most their sum):
      ``shutdown_grace``: in-flight handlers may finish within this; the rest are cancelled.
      ``flush_timeout``: time to write replies already produced.
      ``close_timeout``: time for the transport to close.
    Keepalive:
      ``keepalive_interval``: send a ping this often (None: never); after
      ``keepalive_misses`` unanswered pings in a row the session closes.
    """

    request_timeout: float = attrs.field(default=60.0, validator=positive)
    max_request_timeout: float = attrs.field(default=600.0, validator=positive)
    cancel_notify_timeout: float = attrs.field(default=1.0, validator=positive)
    max_in_flight: int = attrs.field(default=128, validator=positive)
    handler_timeout: float | None = attrs.field(default=None, validator=optional_positive)
    outbox_size: int = attrs.field(default=256, validator=positive)
    notification_backlog: int = attrs.field(default=256, validator=positive)
    shutdown_grace: float = attrs.field(default=5.0, validator=positive)
    flush_timeout: float = attrs.field(default=2.0, validator=positive)
    close_timeout: float = attrs.field(default=2.0, validator=positive)
    keepalive_interval: float | None = attrs.field(default=None, validator=optional_positive)
    keepalive_misses: int = attrs.field(default=3, validator=positive)

    @property
    def close_bound(self) -> float:
        """The longest a close can take, from request to return."""
        return (
            self.shutdown_grace
            + self.cancel_notify_timeout
            + self.flush_timeout
            + self.close_timeout
            + 1.0
        )


NO_TIMEOUT = math.inf
