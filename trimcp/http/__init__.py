"""HTTP pieces both sides share, below authorization and the HTTP transports.

``client``: one small HTTP/1.1 client on Trio (h11), used by the OAuth client and the
Streamable HTTP client transport; ``url``: URL parsing; ``errors``: the HTTP errors of both
sides (:class:`~trimcp.http.errors.HttpClientError` and friends for a failed exchange,
:class:`~trimcp.http.errors.HttpRejection` for a request the server refuses);
``security``: the Host and Origin checks (DNS rebinding) of the HTTP and WebSocket servers.
"""
