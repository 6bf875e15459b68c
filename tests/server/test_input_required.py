"""input_required (2026-07-28 MRTR): the sealed requestState, which answers a handler gets,
and the bad input around them. Driven through the stateless runner, in process."""

from __future__ import annotations

import json
from collections.abc import Hashable
from typing import Any

import pytest

from trimcp import Context, Server
from trimcp.protocol import modern
from trimcp.protocol.jsonrpc import Request
from trimcp.protocol.stateless import RequestRefused, prepare
from trimcp.server.input_required import InputOptions, current_round
from trimcp.server.stateless import StatelessOptions
from trimcp.session.stateless import run_request
from trimcp.stores.request_state import (
    MAX_TOKEN,
    InvalidRequestState,
    RequestStateKeyring,
    derive_key,
)

CAPS: dict[str, Any] = {"elicitation": {}, "sampling": {}, "roots": {}}
FORM = {"type": "object", "properties": {"name": {"type": "string"}}}


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class Outlet:
    def __init__(self) -> None:
        self.sent: list[tuple[str, Any]] = []

    async def send_notification(
        self, method: str, params: Any = None, *, related_request_id: Any = None
    ) -> None:
        self.sent.append((method, params))


def make_server(
    *, keyring: RequestStateKeyring | None = None, clock: Clock | None = None, max_rounds: int = 8
) -> tuple[Server, list[str]]:
    ran: list[str] = []
    inputs = InputOptions(
        keyring=keyring or RequestStateKeyring(), clock=clock or Clock(), max_rounds=max_rounds
    )
    app = Server("inputs", "1.0", stateless=StatelessOptions(inputs=inputs))

    @app.tool()
    async def greet(ctx: Context, who: str = "") -> str:
        ran.append(f"greet {who}")
        answer = await ctx.elicit(f"Name for {who}?", FORM, key="name")
        return f"hello {answer.data['name'] if answer.data else '?'}"

    @app.tool()
    async def endless(ctx: Context) -> str:
        round_no = 0
        while True:  # asks a new question every round: a handler that never finishes
            round_no += 1
            await ctx.elicit(f"Question {round_no}?", FORM, key=f"q{round_no}")

    @app.tool()
    async def auto_keys(ctx: Context) -> str:
        first = await ctx.sample("one", max_tokens=5)
        second = await ctx.sample("two", max_tokens=5)
        roots = await ctx.list_roots()
        return f"{first.model}/{second.model}/{len(roots)}"

    @app.tool()
    async def traced(ctx: Context) -> str:
        trace = ctx.trace
        return json.dumps([trace.traceparent, trace.baggage] if trace else None)

    @app.tool()
    async def asks_twice(ctx: Context) -> str:
        await ctx.elicit("a", FORM, key="same")
        await ctx.elicit("b", FORM, key="same")
        return "never"

    @app.tool()
    async def needs_sampling(ctx: Context) -> str:
        await ctx.sample("hi", max_tokens=1)
        return "sampled"

    return app, ran


async def call(
    app: Server,
    params: dict[str, Any],
    *,
    caps: dict[str, Any] | None = None,
    principal: Hashable | None = None,
    method: str = "tools/call",
    extra_meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    meta = {
        modern.META_PROTOCOL_VERSION: "2026-07-28",
        modern.META_CLIENT_CAPABILITIES: CAPS if caps is None else caps,
        **(extra_meta or {}),
    }
    request = Request(id=1, method=method, params={**params, "_meta": meta})
    try:
        prepared = prepare(app, request)
    except RequestRefused as refused:
        decoded: dict[str, Any] = json.loads(refused.encode())
        return decoded
    answer = await run_request(app, prepared, Outlet(), principal=principal)
    data = answer.encode(None)
    assert data is not None
    result: dict[str, Any] = json.loads(data)
    return result


def accept(name: str) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": name}}


async def first_round(
    app: Server, arguments: dict[str, Any] | None = None, **kwargs: Any
) -> dict[str, Any]:
    reply = await call(app, {"name": "greet", "arguments": arguments or {}}, **kwargs)
    result: dict[str, Any] = reply["result"]
    assert result["resultType"] == "input_required"
    return result


async def test_the_retry_runs_the_same_body_with_its_answer() -> None:
    app, ran = make_server()
    first = await first_round(app, {"who": "ann"})
    assert first["inputRequests"] == {
        "name": {
            "method": "elicitation/create",
            "params": {"message": "Name for ann?", "requestedSchema": FORM, "mode": "form"},
        }
    }
    retry = await call(
        app,
        {
            "name": "greet",
            "arguments": {"who": "ann"},
            "requestState": first["requestState"],
            "inputResponses": {"name": accept("Ann")},
        },
    )
    assert retry["result"]["content"][0]["text"] == "hello Ann"
    assert ran == ["greet ann", "greet ann"]


async def test_state_replayed_for_other_arguments_runs_nothing() -> None:
    app, ran = make_server()
    first = await first_round(app, {"who": "ann"})
    ran.clear()
    replay = await call(
        app,
        {
            "name": "greet",
            "arguments": {"who": "bob"},
            "requestState": first["requestState"],
            "inputResponses": {"name": accept("Bob")},
        },
    )
    assert replay["error"]["code"] == -32602
    assert "issued for another request" in replay["error"]["message"]
    assert ran == []


async def test_state_replayed_on_another_tool_or_method_runs_nothing() -> None:
    app, ran = make_server()
    first = await first_round(app)
    ran.clear()
    other_tool = await call(app, {"name": "auto_keys", "requestState": first["requestState"]})
    assert other_tool["error"]["code"] == -32602
    assert ran == []


async def test_state_of_a_tool_is_refused_by_the_prompt_of_the_same_name() -> None:
    # Same name, same arguments, same principal: only the method tells them apart.
    app, ran = make_server()

    @app.prompt(name="greet")
    def greet_prompt(who: str = "") -> str:
        ran.append(f"prompt {who}")
        return f"Say hello to {who}"

    first = await first_round(app, {"who": "ann"}, principal="alice")
    ran.clear()
    replay = await call(
        app,
        {
            "name": "greet",
            "arguments": {"who": "ann"},
            "requestState": first["requestState"],
            "inputResponses": {"name": accept("Ann")},
        },
        method="prompts/get",
        principal="alice",
    )
    assert replay["error"]["code"] == -32602
    assert "issued for another request" in replay["error"]["message"]
    assert ran == []
    plain = await call(app, {"name": "greet", "arguments": {"who": "ann"}}, method="prompts/get")
    assert plain["result"]["messages"][0]["content"]["text"] == "Say hello to ann"


async def test_state_of_a_resource_is_refused_by_a_prompt_named_by_its_uri() -> None:
    app, ran = make_server()

    @app.resource("secret://vault")
    async def vault(ctx: Context) -> str:
        answer = await ctx.elicit("Passphrase hint?", FORM, key="hint")
        return f"opened with {answer.data['name'] if answer.data else '?'}"

    @app.prompt(name="secret://vault")
    def vault_prompt() -> str:
        ran.append("prompt")
        return "the vault prompt"

    first = (await call(app, {"uri": "secret://vault"}, method="resources/read"))["result"]
    assert first["resultType"] == "input_required"
    replay = await call(
        app,
        {
            "name": "secret://vault",
            "requestState": first["requestState"],
            "inputResponses": {"hint": accept("moon")},
        },
        method="prompts/get",
    )
    assert replay["error"]["code"] == -32602
    assert "issued for another request" in replay["error"]["message"]
    assert ran == []


@pytest.mark.parametrize(
    "mangle",
    [
        lambda s: s + "x",
        lambda s: s[:-4] + ("AAAA" if not s.endswith("AAAA") else "BBBB"),
        lambda s: "v1.other." + s.split(".", 2)[2],
        lambda s: "v2." + s.split(".", 1)[1],
        lambda s: "garbage",
        lambda s: "",
    ],
)
async def test_tampered_state_runs_nothing(mangle: Any) -> None:
    app, ran = make_server()
    first = await first_round(app)
    ran.clear()
    tampered = await call(
        app,
        {
            "name": "greet",
            "requestState": mangle(first["requestState"]),
            "inputResponses": {"name": accept("x")},
        },
    )
    assert tampered["error"]["code"] == -32602
    assert tampered["error"]["data"] == {"path": "params.requestState"}
    assert ran == []


async def test_expired_state_runs_nothing() -> None:
    clock = Clock()
    app, ran = make_server(clock=clock)
    first = await first_round(app)
    ran.clear()
    clock.now += 601  # the default state_ttl is 600 s
    expired = await call(
        app,
        {
            "name": "greet",
            "requestState": first["requestState"],
            "inputResponses": {"name": accept("x")},
        },
    )
    assert expired["error"]["code"] == -32602
    assert "expired" in expired["error"]["message"]
    assert ran == []


async def test_state_is_bound_to_the_principal() -> None:
    app, ran = make_server()
    first = await first_round(app, principal="alice")
    ran.clear()
    stolen = await call(
        app,
        {
            "name": "greet",
            "requestState": first["requestState"],
            "inputResponses": {"name": accept("x")},
        },
        principal="mallory",
    )
    assert stolen["error"]["code"] == -32602
    assert ran == []
    own = await call(
        app,
        {
            "name": "greet",
            "requestState": first["requestState"],
            "inputResponses": {"name": accept("Al")},
        },
        principal="alice",
    )
    assert own["result"]["content"][0]["text"] == "hello Al"


async def test_answers_to_questions_never_asked_are_ignored() -> None:
    app, _ran = make_server()
    first = await first_round(app)
    again = await call(
        app,
        {
            "name": "greet",
            "requestState": first["requestState"],
            "inputResponses": {"bogus": accept("x"), "other": accept("y")},
        },
    )
    # The handler never sees them: its own question is asked again.
    assert again["result"]["resultType"] == "input_required"
    assert list(again["result"]["inputRequests"]) == ["name"]


async def test_an_answer_is_never_reused_for_another_question() -> None:
    app, _ = make_server()
    target = {"file": "a.txt"}

    @app.tool()
    async def delete(ctx: Context) -> str:
        # The question depends on server state that can change between rounds.
        await ctx.elicit(f"Delete {target['file']}?", FORM, key="confirm")
        return f"deleted {target['file']}"

    first = (await call(app, {"name": "delete"}))["result"]
    assert first["inputRequests"]["confirm"]["params"]["message"] == "Delete a.txt?"
    target["file"] = "b.txt"
    retry = await call(
        app,
        {
            "name": "delete",
            "requestState": first["requestState"],
            "inputResponses": {"confirm": accept("yes")},
        },
    )
    # The answer was to "Delete a.txt?": the new question is asked, nothing is deleted.
    assert retry["result"]["resultType"] == "input_required"
    assert retry["result"]["inputRequests"]["confirm"]["params"]["message"] == "Delete b.txt?"
    done = await call(
        app,
        {
            "name": "delete",
            "requestState": retry["result"]["requestState"],
            "inputResponses": {"confirm": accept("yes")},
        },
    )
    assert done["result"]["content"][0]["text"] == "deleted b.txt"


async def test_invalid_input_responses_are_invalid_params() -> None:
    app, ran = make_server()
    for responses in (None, 12, [1], {"name": 12345}, {"name": None}):
        reply = await call(app, {"name": "greet", "inputResponses": responses})
        assert reply["error"]["code"] == -32602, responses
    # An object that is not an ElicitResult for the question asked: -32602 naming the key.
    wrong = await call(app, {"name": "greet", "inputResponses": {"name": {"action": "maybe"}}})
    assert wrong["error"]["code"] == -32602
    assert "inputResponses['name']" in wrong["error"]["message"]
    assert wrong["error"]["data"]["path"].startswith("params.inputResponses.name")
    assert ran == ["greet "]


async def test_unbounded_rounds_end_with_an_error() -> None:
    app, _ran = make_server(max_rounds=3)
    params: dict[str, Any] = {"name": "endless"}
    reply = await call(app, params)
    for round_no in range(1, 4):
        result = reply["result"]
        assert result["resultType"] == "input_required"
        key = f"q{round_no}"
        assert list(result["inputRequests"]) == [key]
        reply = await call(
            app,
            {
                "name": "endless",
                "requestState": result["requestState"],
                "inputResponses": {key: accept("x")},
            },
        )
    assert reply["error"]["code"] == -32600
    assert "3 input_required rounds" in reply["error"]["message"]


async def test_keys_default_to_the_kind_and_order_asked() -> None:
    app, _ = make_server()
    first = (await call(app, {"name": "auto_keys"}))["result"]
    assert list(first["inputRequests"]) == ["sampling-1"]
    sample = {"role": "assistant", "content": {"type": "text", "text": "t"}, "model": "m1"}
    second = (
        await call(
            app,
            {
                "name": "auto_keys",
                "requestState": first["requestState"],
                "inputResponses": {"sampling-1": sample},
            },
        )
    )["result"]
    assert list(second["inputRequests"]) == ["sampling-2"]
    third = await call(
        app,
        {
            "name": "auto_keys",
            "requestState": second["requestState"],
            "inputResponses": {"sampling-2": {**sample, "model": "m2"}},
        },
    )
    assert list(third["result"]["inputRequests"]) == ["roots-1"]
    done = await call(
        app,
        {
            "name": "auto_keys",
            "requestState": third["result"]["requestState"],
            "inputResponses": {"roots-1": {"roots": []}},
        },
    )
    # Answers from earlier rounds travel in the state: round 3 only answered roots.
    assert done["result"]["content"][0]["text"] == "m1/m2/0"


async def test_asking_twice_under_one_key_is_a_server_bug() -> None:
    app, _ = make_server()
    first = (await call(app, {"name": "asks_twice"}))["result"]
    reply = await call(
        app,
        {
            "name": "asks_twice",
            "requestState": first["requestState"],
            "inputResponses": {"same": accept("x")},
        },
    )
    assert reply["result"]["isError"] is True
    assert "already asked" in reply["result"]["content"][0]["text"]


async def test_an_undeclared_capability_is_32021_naming_it() -> None:
    app, _ran = make_server()
    reply = await call(app, {"name": "needs_sampling"}, caps={})
    assert reply["error"]["code"] == -32021
    assert reply["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}


async def test_input_required_only_on_the_three_methods() -> None:
    app, _ = make_server()

    @app.prompt()
    async def asks(ctx: Context) -> str:
        await ctx.elicit("x", FORM)
        return "done"

    listed = await call(app, {}, method="tools/list")
    assert listed["result"]["resultType"] == "complete"
    prompted = await call(app, {"name": "asks"}, method="prompts/get")
    assert prompted["result"]["resultType"] == "input_required"


async def test_trace_context_reaches_the_handler() -> None:
    app, _ = make_server()
    reply = await call(
        app,
        {"name": "traced"},
        extra_meta={
            "traceparent": "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
            "baggage": "user=1",
        },
    )
    assert json.loads(reply["result"]["content"][0]["text"]) == [
        "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01",
        "user=1",
    ]


# --- the keyring ----------------------------------------------------------------------------


def test_replicas_sharing_a_secret_open_each_others_states() -> None:
    one = RequestStateKeyring.from_secret("a shared secret of some length")
    two = RequestStateKeyring.from_secret("a shared secret of some length")
    token = one.seal(b"payload", b"bound")
    assert two.open(token, b"bound") == b"payload"
    with pytest.raises(InvalidRequestState, match="another request"):
        two.open(token, b"other")
    stranger = RequestStateKeyring.from_secret("another secret entirely, long")
    with pytest.raises(InvalidRequestState):
        stranger.open(token, b"bound")


def test_rotation_seals_with_the_new_key_and_still_opens_old_states() -> None:
    old = RequestStateKeyring({"k1": derive_key("first secret value!!")})
    token = old.seal(b"before", b"b")
    rotated = old.rotated("k2", derive_key("second secret value!"))
    assert rotated.current == "k2"
    assert rotated.open(token, b"b") == b"before"
    fresh = rotated.seal(b"after", b"b")
    assert fresh.split(".")[1] == "k2"
    # Once the old key is dropped, old states no longer open (a clear error).
    dropped = RequestStateKeyring({"k2": derive_key("second secret value!")})
    assert dropped.open(fresh, b"b") == b"after"
    with pytest.raises(InvalidRequestState, match="no longer holds"):
        dropped.open(token, b"b")


OLD_SECRET = "the secret we used until today"
NEW_SECRET = "the secret we use from now on"


@pytest.mark.parametrize(
    "opener",
    [(NEW_SECRET, OLD_SECRET), (OLD_SECRET, NEW_SECRET), (OLD_SECRET,)],
    ids=["new-then-old", "old-then-new", "old-alone"],
)
def test_secrets_open_what_they_sealed_wherever_they_sit_in_the_list(
    opener: tuple[str, ...],
) -> None:
    # A key's id comes from the key, not from its place: rotating to (NEW, OLD) on every
    # replica still opens what (OLD) sealed, and an old replica opens it as well.
    token = RequestStateKeyring.from_secret(OLD_SECRET).seal(b"in flight", b"call")
    assert RequestStateKeyring.from_secret(*opener).open(token, b"call") == b"in flight"


def test_a_rotated_keyring_seals_with_its_first_secret() -> None:
    rotated = RequestStateKeyring.from_secret(NEW_SECRET, OLD_SECRET)
    token = rotated.seal(b"fresh", b"call")
    assert token.split(".")[1] == RequestStateKeyring.from_secret(NEW_SECRET).current
    assert RequestStateKeyring.from_secret(NEW_SECRET).open(token, b"call") == b"fresh"
    with pytest.raises(InvalidRequestState, match="never held"):
        RequestStateKeyring.from_secret(OLD_SECRET).open(token, b"call")
    # The same secret twice is one key.
    assert len(RequestStateKeyring.from_secret(NEW_SECRET, NEW_SECRET).key_ids) == 1


def test_a_state_sealed_with_a_key_not_held_is_refused_naming_the_key() -> None:
    token = RequestStateKeyring.from_secret(OLD_SECRET).seal(b"x", b"call")
    key_id = token.split(".")[1]
    with pytest.raises(InvalidRequestState, match=f"sealed with key '{key_id}'.*never held"):
        RequestStateKeyring.from_secret(NEW_SECRET).open(token, b"call")
    # Altered under a key the ring holds: still refused.
    ring = RequestStateKeyring.from_secret(NEW_SECRET, OLD_SECRET)
    body = token.rsplit(".", 1)[1]
    flipped = body[:-2] + ("A" if body[-2] != "A" else "B") + body[-1]
    with pytest.raises(InvalidRequestState, match="altered"):
        ring.open(f"v1.{key_id}.{flipped}", b"call")


def test_a_state_from_another_process_default_keyring_is_refused_as_not_held() -> None:
    token = RequestStateKeyring().seal(b"x", b"call")
    with pytest.raises(InvalidRequestState, match="never held"):
        RequestStateKeyring().open(token, b"call")


def test_keyring_refuses_bad_keys() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        RequestStateKeyring({"k": b"short"})
    with pytest.raises(ValueError, match="key id"):
        RequestStateKeyring({"bad id!": bytes(32)})
    with pytest.raises(ValueError, match="16 bytes"):
        derive_key("short")
    with pytest.raises(ValueError, match="current"):
        RequestStateKeyring({"a": bytes(32)}, current="b")


def test_states_are_encrypted_not_just_signed() -> None:
    keyring = RequestStateKeyring()
    token = keyring.seal(b'{"secret answer": "swordfish"}', b"b")
    assert "swordfish" not in token


def test_an_oversized_state_is_refused_unread() -> None:
    keyring = RequestStateKeyring()
    token = keyring.seal(b"{}", b"b")
    huge = token + "A" * (MAX_TOKEN - len(token) + 1)
    with pytest.raises(InvalidRequestState, match="requestState is too long"):
        keyring.open(huge, b"b")
    longest = token + "A" * (MAX_TOKEN - len(token))  # read, and found altered
    with pytest.raises(InvalidRequestState, match="altered"):
        keyring.open(longest, b"b")


async def test_resources_read_may_ask_too() -> None:
    app, _ = make_server()

    @app.resource("secret://vault")
    async def vault(ctx: Context) -> str:
        answer = await ctx.elicit("Passphrase hint?", FORM, key="hint")
        return f"opened with {answer.data['name'] if answer.data else '?'}"

    first = (await call(app, {"uri": "secret://vault"}, method="resources/read"))["result"]
    assert first["resultType"] == "input_required"
    assert "ttlMs" not in first  # interim results carry no cache hints
    done = await call(
        app,
        {
            "uri": "secret://vault",
            "requestState": first["requestState"],
            "inputResponses": {"hint": accept("moon")},
        },
        method="resources/read",
    )
    assert done["result"]["contents"][0]["text"] == "opened with moon"
    assert done["result"]["cacheScope"] == "private"


def test_a_secret_of_16_bytes_is_the_shortest() -> None:
    assert len(derive_key("s" * 16)) == 32
    assert len(derive_key(b"\xff" * 16)) == 32
    with pytest.raises(ValueError, match="at least 16 bytes"):
        derive_key("s" * 15)


def test_a_state_sealed_by_an_earlier_process_of_the_fleet_still_opens() -> None:
    # Sealed once (v1, a 12-byte nonce) by from_secret of this secret: replicas and
    # restarts on the same secret, of this version or the next, must open it.
    keyring = RequestStateKeyring.from_secret("a shared secret of the fleet")
    sealed = "v1.smSrg0GV6nucN.kX8K4yGqIT_hD6ytFbheWD_zutg8AzMJvBbEWUJrk34W92qI7Nk"
    assert keyring.open(sealed, b"tools/call:deploy") == b'{"step":2}'


def test_only_a_default_keyring_may_be_replaced_by_a_shared_one() -> None:
    assert RequestStateKeyring().generated
    assert not RequestStateKeyring.from_secret("s" * 16).generated
    assert not RequestStateKeyring({"a": bytes(32)}).generated


def test_an_empty_state_opens_and_malformed_ones_are_refused_by_name() -> None:
    keyring = RequestStateKeyring({"k": bytes(32)}, current="k")
    assert keyring.open(keyring.seal(b"", b"b"), b"b") == b""  # nonce and tag only
    for token in ("v1.k", "v1.k.AAAA.AAAA", "v2.k.AAAA", "v1"):
        with pytest.raises(InvalidRequestState, match="not one this server issued"):
            keyring.open(token, b"b")
    with pytest.raises(InvalidRequestState, match="not valid base64url"):
        keyring.open("v1.k.A", b"b")
    with pytest.raises(InvalidRequestState, match="truncated"):
        keyring.open("v1.k." + "A" * 36, b"b")  # 27 bytes: one short of nonce and tag


def test_adopting_keys_drops_a_key_whose_bytes_changed() -> None:
    mine = RequestStateKeyring({"p1": bytes(32), "p0": b"\x01" * 32}, current="p1")
    old = mine.seal(b"old", b"b")  # the cipher of p1's first bytes is now cached
    kept = RequestStateKeyring({"p0": b"\x01" * 32}, current="p0").seal(b"kept", b"b")
    other = RequestStateKeyring({"p1": b"\x02" * 32, "p0": b"\x01" * 32}, current="p1")
    mine.adopt(other)
    assert mine.open(other.seal(b"new", b"b"), b"b") == b"new"
    with pytest.raises(InvalidRequestState, match="altered"):
        mine.open(old, b"b")
    assert mine.open(kept, b"b") == b"kept"


async def test_only_a_call_that_can_ask_runs_as_an_input_round() -> None:
    # A tool whose function takes no Context cannot ask, so its call runs without an
    # input round (no scope, no current round); a request carrying requestState or
    # inputResponses still opens one (the state is checked before anything runs), and a
    # mounted tool taking a Context still asks through its mount.
    app, ran = make_server()

    @app.tool()
    async def plain(who: str = "") -> str:
        ran.append(f"plain {who} in a round: {current_round.get() is not None}")
        return f"plain {who}"

    reply = await call(app, {"name": "plain", "arguments": {"who": "ann"}})
    assert reply["result"]["content"][0]["text"] == "plain ann"
    assert ran == ["plain ann in a round: False"]
    refused = await call(app, {"name": "plain", "requestState": "garbage"})
    assert refused["error"]["code"] == -32602
    assert refused["error"]["data"] == {"path": "params.requestState"}
    answered = await call(app, {"name": "plain", "inputResponses": {"x": accept("x")}})
    assert answered["result"]["content"][0]["text"] == "plain "
    assert ran[1:] == ["plain  in a round: True"]

    parent = Server("parent", "1.0")
    parent.mount(app, "child")
    asked = await call(parent, {"name": "child_greet", "arguments": {"who": "bob"}})
    assert asked["result"]["resultType"] == "input_required"
    assert list(asked["result"]["inputRequests"]) == ["name"]
