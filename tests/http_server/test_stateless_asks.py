"""Stateless HTTP mode (``--stateless``, 2025 versions): a tool that asks the client
something (sampling, elicitation, roots) cannot, because the server has no way to send a
request back. The error says that, and what to do, instead of blaming the client for a
capability it was never asked to declare (the implicit initialize declares none)."""

from __future__ import annotations

import trio

from tests.http_server.helpers import WAIT, running_app, tool_call
from trimcp import Context, Server
from trimcp.transports.http_server import HttpServerConfig


def asking_server() -> Server:
    app = Server("asks")

    @app.tool()
    async def summarize(text: str, ctx: Context) -> str:
        result = await ctx.sample(f"Summarize: {text}", max_tokens=50)
        return str(result)

    @app.tool()
    async def confirm(ctx: Context) -> str:
        answer = await ctx.elicit("Sure?", {"type": "object", "properties": {}})
        return str(answer)

    @app.tool()
    async def roots(ctx: Context) -> str:
        return str(await ctx.list_roots())

    return app


async def test_asking_the_client_in_stateless_mode_says_why_it_cannot(
    autojump_clock: trio.abc.Clock,
) -> None:
    async with running_app(HttpServerConfig(stateless=True), asking_server()) as (_, client):
        for number, (name, args, feature) in enumerate(
            [
                ("summarize", {"text": "x"}, "sampling"),
                ("confirm", {}, "elicitation"),
                ("roots", {}, "roots"),
            ]
        ):
            with trio.fail_after(WAIT):
                reply = await client.post(tool_call(number, name, args), version="2025-06-18")
            assert reply.status == 200
            answer = reply.messages()[-1]
            text = str(answer.get("error") or answer["result"])
            assert feature in text, text
            assert "stateless HTTP mode" in text, text
            assert "without --stateless" in text, text
            assert "stateless-http-client" not in text, text
