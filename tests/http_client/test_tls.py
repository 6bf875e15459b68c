"""https: certificates are verified by default; a caller's context decides otherwise."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.http_client.fakeserver import McpApp, fake_server
from tests.http_client.helpers import http_session
from tests.support import init_params
from trimcp.errors import CONNECTION_CLOSED, McpError


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (cert file, key file)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "trimcp test")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    folder = tmp_path_factory.mktemp("tls")
    cert_file, key_file = folder / "cert.pem", folder / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


def server_context(certificate: tuple[Path, Path]) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    return context


async def test_https_with_a_trusting_context(
    autojump_clock: Any, certificate: tuple[Path, Path]
) -> None:
    client_context = ssl.create_default_context(cafile=str(certificate[0]))
    async with (
        fake_server(McpApp(), tls=server_context(certificate)) as server,
        http_session(server.url, ssl_context=client_context) as (session, transport),
    ):
        await session.send_request("tools/list")
        assert transport.session_id == "session-1"
        assert server.url.startswith("https://")


async def test_https_verifies_certificates_by_default(
    autojump_clock: Any, certificate: tuple[Path, Path]
) -> None:
    async with (
        fake_server(McpApp(), tls=server_context(certificate)) as server,
        http_session(server.url, initialize=False) as (session, _),
    ):
        with pytest.raises(McpError, match=r"TLS handshake .* CERTIFICATE_VERIFY_FAILED") as caught:
            await session.initialize(init_params())
        assert caught.value.code == CONNECTION_CLOSED
        assert server.requests == []
