"""homebot as Home Assistant's conversation agent: one conversation entity per homebot
(docs/home-assistant.md). Its turns stream into HA's chat log, and HA keeps listening
when homebot's reply waits for an answer."""

from __future__ import annotations

from homeassistant.config_entries import ConfigEntry
from homeassistant.const import Platform
from homeassistant.core import HomeAssistant
from homeassistant.exceptions import ConfigEntryAuthFailed, ConfigEntryNotReady
from homeassistant.helpers.aiohttp_client import async_get_clientsession

from .client import HomebotClient, HomebotError, InvalidAuth
from .const import CONF_TOKEN, CONF_URL, DOMAIN
from .models import HomebotData

PLATFORMS = [Platform.CONVERSATION]

type HomebotConfigEntry = ConfigEntry[HomebotData]


async def async_setup_entry(hass: HomeAssistant, entry: HomebotConfigEntry) -> bool:
    """Set up homebot from a config entry."""
    client = HomebotClient(
        async_get_clientsession(hass), entry.data[CONF_URL], entry.data[CONF_TOKEN]
    )
    try:
        info = await client.async_info()
    except InvalidAuth as err:
        raise ConfigEntryAuthFailed(
            translation_domain=DOMAIN,
            translation_key="invalid_auth",
            translation_placeholders={"url": client.url},
        ) from err
    except HomebotError as err:
        raise ConfigEntryNotReady(
            translation_domain=DOMAIN,
            translation_key="cannot_connect",
            translation_placeholders={"url": client.url, "error": str(err)},
        ) from err
    entry.runtime_data = HomebotData(client=client, info=info)
    await hass.config_entries.async_forward_entry_setups(entry, PLATFORMS)
    return True


async def async_unload_entry(hass: HomeAssistant, entry: HomebotConfigEntry) -> bool:
    """Unload a config entry."""
    return await hass.config_entries.async_unload_platforms(entry, PLATFORMS)
