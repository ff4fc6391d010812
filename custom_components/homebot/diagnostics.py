"""Diagnostics, the token redacted."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from homeassistant.components.diagnostics import async_redact_data
from homeassistant.core import HomeAssistant

from . import HomebotConfigEntry
from .const import CONF_TOKEN

TO_REDACT = {CONF_TOKEN}


async def async_get_config_entry_diagnostics(
    hass: HomeAssistant, entry: HomebotConfigEntry
) -> dict[str, Any]:
    """The entry's data without its token, and what homebot said at setup."""
    return {
        "entry": async_redact_data(dict(entry.data), TO_REDACT),
        "homebot": asdict(entry.runtime_data.info),
    }
