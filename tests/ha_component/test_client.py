"""The client against a real TLS server with a certificate HA does not trust, and the
frame reader's edge cases."""

from __future__ import annotations

import datetime
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from fake_homebot import FakeHomebot, reply

from homeassistant.config_entries import SOURCE_USER
from homeassistant.core import HomeAssistant
from homeassistant.helpers.aiohttp_client import async_get_clientsession

from custom_components.homebot.client import HomebotClient, InvalidCertificate
from custom_components.homebot.const import CONF_TOKEN, CONF_URL, DOMAIN


def _self_signed(tmp: Path) -> ssl.SSLContext:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "homebot")])
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
        .sign(key, hashes.SHA256())
    )
    (tmp / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp / "key.pem").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tmp / "cert.pem", tmp / "key.pem")
    return context


class _Info(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        body = b'{"version": "1"}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


@pytest.fixture
def tls_url(socket_enabled: None, tmp_path: Path) -> Iterator[str]:
    """An https server on 127.0.0.1 whose certificate nobody trusts, in a thread of its
    own: the handshake the client refuses fails there, not in HA's event loop."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Info)
    server.socket = _self_signed(tmp_path).wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"https://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


async def test_untrusted_certificate(hass: HomeAssistant, tls_url: str) -> None:
    """The client says so, and the config flow shows invalid_certificate."""
    client = HomebotClient(async_get_clientsession(hass), tls_url, "t")
    with pytest.raises(InvalidCertificate):
        await client.async_info()
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": SOURCE_USER}
    )
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: tls_url, CONF_TOKEN: "t"}
    )
    assert result["errors"] == {"base": "invalid_certificate"}


async def test_blank_lines_between_frames(hass: HomeAssistant, homebot: FakeHomebot) -> None:
    """Empty lines are skipped; the reply still ends the turn."""
    homebot.frames = [b"\n\n", reply("ok")]
    client = HomebotClient(async_get_clientsession(hass), homebot.url, homebot.token)
    frames = [f async for f in client.async_turn({"text": "hi"})]
    assert [f["type"] for f in frames] == ["reply"]
