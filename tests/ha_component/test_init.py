"""Setting up and unloading an entry; the device; diagnostics."""

from __future__ import annotations

from fake_homebot import FakeHomebot
from pytest_homeassistant_custom_component.common import MockConfigEntry

from homeassistant.config_entries import ConfigEntryState
from homeassistant.core import HomeAssistant
from homeassistant.helpers import device_registry as dr

from custom_components.homebot.const import CONF_TOKEN, DOMAIN
from custom_components.homebot.diagnostics import async_get_config_entry_diagnostics


async def test_setup_and_unload(
    hass: HomeAssistant, homebot: FakeHomebot, entry: MockConfigEntry
) -> None:
    """A reachable homebot: loaded, one service device carrying homebot's version and
    its dashboard's URL; unloading works."""
    homebot.info["version"] = "0.4.2"
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.LOADED
    device = dr.async_get(hass).async_get_device(identifiers={(DOMAIN, entry.entry_id)})
    assert device is not None
    assert device.entry_type is dr.DeviceEntryType.SERVICE
    assert device.sw_version == "0.4.2"
    assert device.configuration_url == homebot.url
    assert device.name == entry.title
    assert device.manufacturer == "homebot"
    assert await hass.config_entries.async_unload(entry.entry_id)
    assert entry.state is ConfigEntryState.NOT_LOADED


async def test_two_gateways_two_devices(
    hass: HomeAssistant, homebot: FakeHomebot, entry: MockConfigEntry
) -> None:
    """Two homebots are two devices with two names."""
    other = FakeHomebot(entry.data[CONF_TOKEN])
    await other.start()
    try:
        second = MockConfigEntry(
            domain=DOMAIN,
            title=f"homebot (127.0.0.1:{other.port})",
            data={**entry.data, "url": other.url},
        )
        for each in (entry, second):
            each.add_to_hass(hass)
            assert await hass.config_entries.async_setup(each.entry_id)
        await hass.async_block_till_done()
        names = {
            d.name for d in dr.async_get(hass).devices.values() if d.manufacturer == "homebot"
        }
        assert names == {entry.title, second.title}
        states = hass.states.async_all("conversation")
        assert len([s for s in states if s.entity_id.startswith("conversation.homebot")]) == 2
        for each in (entry, second):
            await hass.config_entries.async_unload(each.entry_id)
    finally:
        await other.stop()


async def test_setup_refused_token_asks_for_it(
    hass: HomeAssistant, homebot: FakeHomebot, entry: MockConfigEntry
) -> None:
    """A token homebot refuses at setup: a setup error and a reauth flow."""
    homebot.token = "rotated"
    entry.add_to_hass(hass)
    assert not await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    assert entry.state is ConfigEntryState.SETUP_ERROR
    flows = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
    assert [f["context"]["source"] for f in flows] == ["reauth"]


async def test_setup_unreachable_retries(
    hass: HomeAssistant, homebot: FakeHomebot, entry: MockConfigEntry
) -> None:
    """homebot down at setup: HA retries later, with a translated reason."""
    await homebot.stop()
    entry.add_to_hass(hass)
    assert not await hass.config_entries.async_setup(entry.entry_id)
    assert entry.state is ConfigEntryState.SETUP_RETRY
    assert entry.reason is not None
    assert homebot.url in entry.reason


async def test_diagnostics_redact_the_token(
    hass: HomeAssistant, homebot: FakeHomebot, entry: MockConfigEntry
) -> None:
    """The token never appears in diagnostics."""
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    diagnostics = await async_get_config_entry_diagnostics(hass, entry)
    assert diagnostics["entry"][CONF_TOKEN] == "**REDACTED**"
    assert diagnostics["homebot"] == {
        "name": "homebot",
        "version": "0.1.0",
        "household": None,
    }
    assert entry.data[CONF_TOKEN] not in str(diagnostics)
    await hass.config_entries.async_unload(entry.entry_id)
