"""ServeSettings: TRIMCP_* variables under explicit arguments, and clear errors."""

from __future__ import annotations

import pytest

from trimcp.server.serving import ServeSettings, SettingsError


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
