"""ServeSettings: TRIMCP_* variables under explicit arguments, and clear errors."""

from __future__ import annotations

import itertools

import pytest

from trimcp import InputOptions, RequestStateKeyring, Server, StatelessOptions
from trimcp.server.serving import (
    ServeSettings,
    SettingsError,
    state_keyring_from_env,
    use_state_secret,
)


def test_defaults_environment_then_arguments() -> None:
    assert ServeSettings.from_env({}) == ServeSettings()
    env = {
        "TRIMCP_TRANSPORT": "ws",
        "TRIMCP_HOST": "0.0.0.0",
        "TRIMCP_PORT": "9000",
        "TRIMCP_ALLOWED_HOSTS": "api.example, localhost",
        "TRIMCP_JSON_RESPONSE": "off",
        "TRIMCP_ALLOWED_ORIGINS": "https://app.example",
        "TRIMCP_LOG_LEVEL": "DEBUG",
    }
    settings = ServeSettings.from_env(env)
    assert settings.transport == "websocket"
    assert (settings.host, settings.port, settings.bound_port) == ("0.0.0.0", 9000, 9000)
    assert settings.allowed_hosts == ("api.example", "localhost")
    assert settings.allowed_origins == ("https://app.example",)
    assert (settings.json_response, settings.log_level) == (False, "debug")
    explicit = ServeSettings.from_env(env, transport="http", port=None, allowed_hosts=["x"])
    assert (explicit.transport, explicit.port, explicit.allowed_hosts) == ("http", 9000, ("x",))
    assert ServeSettings(transport="http").bound_port == 8000


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"transport": "sse2"}, "unknown transport 'sse2'"),
        ({"path": "mcp"}, "must start with '/'"),
        ({"log_level": "loud"}, "unknown log level 'loud'"),
    ],
)
def test_bad_arguments_name_themselves(overrides: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        ServeSettings.from_env({}, **overrides)


# --- TRIMCP_STATE_SECRET -------------------------------------------------------------------

A = "the secret sealing until today"
B = "the secret sealing from today"


def _round_trip(sealer: dict[str, str], opener: dict[str, str]) -> bytes:
    sealing, opening = state_keyring_from_env(sealer), state_keyring_from_env(opener)
    assert sealing is not None
    assert opening is not None
    return opening.open(sealing.seal(b"state", b"call"), b"call")


def test_every_step_of_a_rotation_opens_every_other_steps_states() -> None:
    steps = [
        {"TRIMCP_STATE_SECRET": A},
        {"TRIMCP_STATE_SECRET": A, "TRIMCP_STATE_SECRET_OLD": B},  # B opens everywhere...
        {"TRIMCP_STATE_SECRET": B, "TRIMCP_STATE_SECRET_OLD": A},  # ...before it seals
    ]
    for sealer, opener in itertools.pairwise(steps):
        assert _round_trip(sealer, opener) == b"state"
        assert _round_trip(opener, sealer) == b"state"
    assert _round_trip(steps[2], {"TRIMCP_STATE_SECRET": B}) == b"state"
    assert state_keyring_from_env({}) is None


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"TRIMCP_STATE_SECRET": "short"}, "TRIMCP_STATE_SECRET: a requestState secret needs"),
        (
            {"TRIMCP_STATE_SECRET": A, "TRIMCP_STATE_SECRET_OLD": "short"},
            "TRIMCP_STATE_SECRET_OLD: a requestState secret needs at least 16 bytes",
        ),
        ({"TRIMCP_STATE_SECRET_OLD": B}, "TRIMCP_STATE_SECRET_OLD is set without"),
    ],
)
def test_bad_state_secrets_name_their_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        state_keyring_from_env(env)


def test_the_secret_replaces_only_a_default_keyring() -> None:
    env = {"TRIMCP_STATE_SECRET": A}
    default = Server("default")
    assert use_state_secret(default, ServeSettings(transport="http"), env) is None
    sealed = default.request_state_keyring.seal(b"state", b"call")
    opened = state_keyring_from_env(env)
    assert opened is not None
    assert opened.open(sealed, b"call") == b"state"
    assert not default.request_state_keyring.generated  # a shared store keeps it as it is

    own = RequestStateKeyring.from_secret(B)
    configured = Server("own", stateless=StatelessOptions(inputs=InputOptions(keyring=own)))
    assert use_state_secret(configured, ServeSettings(transport="http"), env) is None
    assert configured.request_state_keyring.current == own.current


@pytest.mark.parametrize(
    ("settings", "warns"),
    [
        (ServeSettings(transport="http", reuse_port=True), True),
        (ServeSettings(transport="http", store="memory://", reuse_port=True), True),
        (ServeSettings(transport="http", store="redis://127.0.0.1:6379/0", reuse_port=True), False),
        # One process alone (or restarted by `trimcp dev`) loses states only as it stops.
        (ServeSettings(transport="http"), False),
        (ServeSettings(transport="http", store="memory://"), False),
        (ServeSettings(transport="stdio"), False),
    ],
)
def test_a_random_key_on_a_shared_port_without_a_shared_store_warns(
    settings: ServeSettings, warns: bool
) -> None:
    warning = use_state_secret(Server("default"), settings, {})
    assert (warning is not None) == warns
    if warning is not None:
        assert "set TRIMCP_STATE_SECRET" in warning
