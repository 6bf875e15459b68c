"""The client framework: a typed MCP client over one session, on any transport.

Open one with :func:`connect_stdio`, :func:`connect_memory` or :func:`connect_transport`;
see ``docs/client.md``.
"""

from trimcp.client.client import DEFAULT_MAX_PAGES as DEFAULT_MAX_PAGES
from trimcp.client.client import Client as Client
from trimcp.client.client import ClientKwargs as ClientKwargs
from trimcp.client.connect import connect_http as connect_http
from trimcp.client.connect import connect_memory as connect_memory
from trimcp.client.connect import connect_stdio as connect_stdio
from trimcp.client.connect import connect_transport as connect_transport
from trimcp.client.connect import connect_websocket as connect_websocket
from trimcp.client.errors import PaginationError as PaginationError
from trimcp.client.errors import ToolOutputError as ToolOutputError
from trimcp.client.handlers import Callback as Callback
from trimcp.client.handlers import ClientHandlers as ClientHandlers
from trimcp.client.handlers import ElicitationHandler as ElicitationHandler
from trimcp.client.handlers import ElicitationMode as ElicitationMode
from trimcp.client.handlers import HandlerKwargs as HandlerKwargs
from trimcp.client.handlers import ListChangedCallback as ListChangedCallback
from trimcp.client.handlers import NotificationCallback as NotificationCallback
from trimcp.client.handlers import Progress as Progress
from trimcp.client.handlers import RootsProvider as RootsProvider
from trimcp.client.handlers import SamplingHandler as SamplingHandler
from trimcp.client.listen import ListenEvent as ListenEvent
from trimcp.client.listen import ListenNotAcknowledged as ListenNotAcknowledged
from trimcp.client.listen import Subscription as Subscription
from trimcp.client.listen import SubscriptionLost as SubscriptionLost
from trimcp.client.mrtr import InputRoundsExceeded as InputRoundsExceeded
from trimcp.client.mrtr import MalformedInputRequest as MalformedInputRequest
from trimcp.client.mrtr import MissingInputHandler as MissingInputHandler
from trimcp.client.pagination import PageIterator as PageIterator
from trimcp.client.schema import SchemaUnsupported as SchemaUnsupported
from trimcp.client.schema import SchemaViolation as SchemaViolation
from trimcp.client.stateless import Era as Era
from trimcp.client.stateless import NoCommonVersion as NoCommonVersion
from trimcp.client.tasks import TaskHandle as TaskHandle
