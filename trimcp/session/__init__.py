"""The Trio session engine: a nursery per session, a cancel scope per inbound request."""

from trimcp.session.context import RequestContext as RequestContext
from trimcp.session.engine import Session as Session
from trimcp.session.engine import SessionHandler as SessionHandler
from trimcp.session.engine import open_session as open_session
from trimcp.session.engine import serve_session as serve_session
from trimcp.session.options import SessionOptions as SessionOptions
from trimcp.session.outbound import ProgressCallback as ProgressCallback
