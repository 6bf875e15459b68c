"""The authorization tests' oidc-provider fixture (installs it, or skips without npm)."""

from tests.auth.conftest import oidc_provider as oidc_provider
