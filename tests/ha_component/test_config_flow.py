"""The config flow: user, reconfigure, reauth and Supervisor discovery, every error."""

from __future__ import annotations

from unittest.mock import patch

import pytest
from conftest import TOKEN
from fake_homebot import FakeHomebot
from pytest_homeassistant_custom_component.common import MockConfigEntry

from homeassistant.config_entries import SOURCE_HASSIO, SOURCE_USER
from homeassistant.core import HomeAssistant
from homeassistant.data_entry_flow import FlowResultType
from homeassistant.helpers.service_info.hassio import HassioServiceInfo

from custom_components.homebot.client import InvalidCertificate
from custom_components.homebot.const import CONF_TOKEN, CONF_URL, DOMAIN

CHECK = "custom_components.homebot.client.HomebotClient.async_info"


async def _user_form(hass: HomeAssistant) -> str:
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": SOURCE_USER}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "user"
    assert result["errors"] == {}
    return result["flow_id"]


async def test_user_creates_entry(hass: HomeAssistant, homebot: FakeHomebot) -> None:
    """The right URL and token make an entry named after host:port."""
    flow_id = await _user_form(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: f" {homebot.url}/ ", CONF_TOKEN: TOKEN}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["title"] == f"homebot (127.0.0.1:{homebot.port})"
    assert result["data"] == {CONF_URL: homebot.url, CONF_TOKEN: TOKEN}


async def test_user_title_names_household(
    hass: HomeAssistant, homebot: FakeHomebot
) -> None:
    """homebot's household goes into the title."""
    homebot.info["household"] = "王家"
    flow_id = await _user_form(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: homebot.url, CONF_TOKEN: TOKEN}
    )
    assert result["title"] == f"homebot 王家 (127.0.0.1:{homebot.port})"


@pytest.mark.parametrize(
    "url",
    [
        "ftp://127.0.0.1:8080",
        "http://",
        "127.0.0.1:8080",
        "http://127.0.0.1:8080/dashboard",
        "http://127.0.0.1:8080/?x=1",
        "http://127.0.0.1:8080/#top",
        "http://me:pw@127.0.0.1:8080",
        "http://[::1",
        "",
    ],
)
async def test_user_invalid_url(hass: HomeAssistant, url: str) -> None:
    """Anything but http(s)://host[:port] is refused on the URL field, unchecked."""
    flow_id = await _user_form(hass)
    with patch(CHECK) as check:
        result = await hass.config_entries.flow.async_configure(
            flow_id, {CONF_URL: url, CONF_TOKEN: TOKEN}
        )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {CONF_URL: "invalid_url"}
    check.assert_not_called()


async def test_user_invalid_auth_then_right_token(
    hass: HomeAssistant, homebot: FakeHomebot
) -> None:
    """A wrong token is invalid_auth; the form stays and the right token goes on."""
    flow_id = await _user_form(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: homebot.url, CONF_TOKEN: "wrong"}
    )
    assert result["type"] is FlowResultType.FORM
    assert result["errors"] == {"base": "invalid_auth"}
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: homebot.url, CONF_TOKEN: TOKEN}
    )
    assert result["type"] is FlowResultType.CREATE_ENTRY


@pytest.mark.parametrize(
    ("status", "info"),
    [
        (429, None),
        (503, None),
        (403, None),
        (200, "<html>not homebot</html>"),
        (200, {"name": "something else"}),
        (200, ["a", "list"]),
    ],
)
async def test_user_cannot_connect(
    hass: HomeAssistant, homebot: FakeHomebot, status: int, info: object
) -> None:
    """Too many tries, another status, or an answer that is not homebot's info."""
    homebot.info_status = status
    if info is not None:
        homebot.info = info
    flow_id = await _user_form(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: homebot.url, CONF_TOKEN: TOKEN}
    )
    assert result["errors"] == {"base": "cannot_connect"}


async def test_user_cannot_connect_nothing_listens(
    hass: HomeAssistant, homebot: FakeHomebot
) -> None:
    """Nothing on the port: cannot_connect, and no entry."""
    await homebot.stop()
    flow_id = await _user_form(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: homebot.url, CONF_TOKEN: TOKEN}
    )
    assert result["errors"] == {"base": "cannot_connect"}
    assert not hass.config_entries.async_entries(DOMAIN)


async def test_user_invalid_certificate(hass: HomeAssistant) -> None:
    """A refused TLS certificate is told apart from an unreachable URL."""
    flow_id = await _user_form(hass)
    with patch(CHECK, side_effect=InvalidCertificate("self-signed")):
        result = await hass.config_entries.flow.async_configure(
            flow_id, {CONF_URL: "https://homebot.local:8443", CONF_TOKEN: TOKEN}
        )
    assert result["errors"] == {"base": "invalid_certificate"}


async def test_user_unknown_error_is_logged(
    hass: HomeAssistant, caplog: pytest.LogCaptureFixture
) -> None:
    """Any other exception is `unknown`, with its traceback in the log."""
    flow_id = await _user_form(hass)
    with patch(CHECK, side_effect=RuntimeError("boom")):
        result = await hass.config_entries.flow.async_configure(
            flow_id, {CONF_URL: "http://homebot.local:8080", CONF_TOKEN: TOKEN}
        )
    assert result["errors"] == {"base": "unknown"}
    assert "Unexpected error while checking homebot" in caplog.text
    assert "RuntimeError: boom" in caplog.text


async def test_user_already_configured(
    hass: HomeAssistant, homebot: FakeHomebot, entry: MockConfigEntry
) -> None:
    """The same URL twice is refused before it is checked."""
    entry.add_to_hass(hass)
    flow_id = await _user_form(hass)
    result = await hass.config_entries.flow.async_configure(
        flow_id, {CONF_URL: homebot.url + "/", CONF_TOKEN: TOKEN}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "already_configured"


async def test_reconfigure(
    hass: HomeAssistant, homebot: FakeHomebot, entry: MockConfigEntry
) -> None:
    """A new URL and token replace the old ones, checked first; the title follows."""
    entry.add_to_hass(hass)
    await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    await homebot.stop()
    moved = FakeHomebot("new-token")
    moved.info["household"] = "Smiths"
    await moved.start()
    try:
        result = await entry.start_reconfigure_flow(hass)
        assert result["type"] is FlowResultType.FORM
        assert result["step_id"] == "reconfigure"
        assert result["description_placeholders"]["name"] == entry.title
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_URL: "gopher://x", CONF_TOKEN: "new-token"}
        )
        assert result["errors"] == {CONF_URL: "invalid_url"}
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_URL: moved.url, CONF_TOKEN: "old"}
        )
        assert result["errors"] == {"base": "invalid_auth"}
        result = await hass.config_entries.flow.async_configure(
            result["flow_id"], {CONF_URL: moved.url, CONF_TOKEN: "new-token"}
        )
        assert result["type"] is FlowResultType.ABORT
        assert result["reason"] == "reconfigure_successful"
        assert entry.data == {CONF_URL: moved.url, CONF_TOKEN: "new-token"}
        assert entry.title == f"homebot Smiths (127.0.0.1:{moved.port})"
        await hass.async_block_till_done()
        await hass.config_entries.async_unload(entry.entry_id)
    finally:
        await moved.stop()


async def test_reconfigure_to_another_entrys_url(
    hass: HomeAssistant, homebot: FakeHomebot, entry: MockConfigEntry
) -> None:
    """Pointing one entry at another's homebot is already_configured."""
    entry.add_to_hass(hass)
    other = MockConfigEntry(
        domain=DOMAIN, data={CONF_URL: "http://10.0.0.2:8080", CONF_TOKEN: "t"}
    )
    other.add_to_hass(hass)
    result = await other.start_reconfigure_flow(hass)
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_URL: homebot.url, CONF_TOKEN: TOKEN}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "already_configured"


async def test_reauth_names_the_gateway(
    hass: HomeAssistant, homebot: FakeHomebot, entry: MockConfigEntry
) -> None:
    """The reauth form names the homebot; a wrong token is refused, the right one
    stored."""
    entry.add_to_hass(hass)
    result = await entry.start_reauth_flow(hass)
    assert result["step_id"] == "reauth_confirm"
    assert result["description_placeholders"] == {
        "name": entry.title,
        "url": homebot.url,
    }
    homebot.token = "rotated"
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_TOKEN: TOKEN}
    )
    assert result["errors"] == {"base": "invalid_auth"}
    result = await hass.config_entries.flow.async_configure(
        result["flow_id"], {CONF_TOKEN: "rotated"}
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "reauth_successful"
    assert entry.data[CONF_TOKEN] == "rotated"
    await hass.async_block_till_done()
    await hass.config_entries.async_unload(entry.entry_id)


def _discovery(url: str, token: str = TOKEN) -> HassioServiceInfo:
    return HassioServiceInfo(
        config={CONF_URL: url, CONF_TOKEN: token, "addon": "homebot"},
        name="homebot",
        slug="a1b2c3_homebot",
        uuid="0123456789abcdef",
    )


async def test_hassio_discovery_one_click(
    hass: HomeAssistant, homebot: FakeHomebot
) -> None:
    """The add-on's announcement offers a one-click setup with its URL and token."""
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": SOURCE_HASSIO}, data=_discovery(homebot.url)
    )
    assert result["type"] is FlowResultType.FORM
    assert result["step_id"] == "hassio_confirm"
    assert result["description_placeholders"] == {"addon": "homebot"}
    homebot.info_status = 503
    result = await hass.config_entries.flow.async_configure(result["flow_id"], {})
    assert result["errors"] == {"base": "cannot_connect"}
    homebot.info_status = 200
    result = await hass.config_entries.flow.async_configure(result["flow_id"], {})
    assert result["type"] is FlowResultType.CREATE_ENTRY
    assert result["data"] == {CONF_URL: homebot.url, CONF_TOKEN: TOKEN}
    assert result["result"].unique_id == "hassio:a1b2c3_homebot"
    await hass.async_block_till_done()
    # the same add-on again: already there
    result = await hass.config_entries.flow.async_init(
        DOMAIN,
        context={"source": SOURCE_HASSIO},
        data=_discovery("http://other-host:8080"),
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "already_configured"
    await hass.config_entries.async_unload(result_entry(hass).entry_id)


def result_entry(hass: HomeAssistant) -> MockConfigEntry:
    """The one homebot entry."""
    (found,) = hass.config_entries.async_entries(DOMAIN)
    return found


async def test_hassio_updates_the_token_of_an_entry(
    hass: HomeAssistant, homebot: FakeHomebot, entry: MockConfigEntry
) -> None:
    """An entry for the add-on's URL takes the add-on's new token."""
    entry.add_to_hass(hass)
    result = await hass.config_entries.flow.async_init(
        DOMAIN,
        context={"source": SOURCE_HASSIO},
        data=_discovery(homebot.url, "from-addon"),
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "already_configured"
    assert entry.data[CONF_TOKEN] == "from-addon"
    await hass.async_block_till_done()


@pytest.mark.parametrize(
    ("url", "token"), [("not a url", TOKEN), ("http://addon:8080", ""), ("", TOKEN)]
)
async def test_hassio_invalid_discovery(
    hass: HomeAssistant, url: str, token: str
) -> None:
    """An announcement without a usable URL or token is dropped."""
    result = await hass.config_entries.flow.async_init(
        DOMAIN, context={"source": SOURCE_HASSIO}, data=_discovery(url, token)
    )
    assert result["type"] is FlowResultType.ABORT
    assert result["reason"] == "invalid_discovery_info"
