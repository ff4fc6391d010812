"""The turn's context where the conversation tests do not reach: a newer HA naming the
satellite, devices without an area, users that are not people."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_homeassistant_custom_component.common import MockConfigEntry

from homeassistant.components import conversation
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import area_registry as ar
from homeassistant.helpers import device_registry as dr

from custom_components.homebot.ask import device_area, satellite_id, user_name


@dataclass(slots=True)
class NewerInput(conversation.ConversationInput):
    """ConversationInput as HA 2026.2+ has it, with the satellite it came from."""

    satellite_id: str | None = None


def _input(device_id: str | None = None, **extra: str) -> conversation.ConversationInput:
    cls = NewerInput if extra else conversation.ConversationInput
    return cls(
        text="hi",
        context=Context(),
        conversation_id=None,
        device_id=device_id,
        language="en",
        agent_id="conversation.homebot",
        **extra,
    )


async def test_satellite_named_by_newer_ha(hass: HomeAssistant) -> None:
    """user_input.satellite_id wins over the registry."""
    assert (
        satellite_id(hass, _input("dev", satellite_id="assist_satellite.hall"))
        == "assist_satellite.hall"
    )


async def test_no_satellite_without_device(hass: HomeAssistant) -> None:
    """Typed Assist names no satellite."""
    assert satellite_id(hass, _input()) is None


async def test_device_without_area(hass: HomeAssistant) -> None:
    """An unknown device, a device in no area, an area on no floor."""
    source = MockConfigEntry(domain="esphome")
    source.add_to_hass(hass)
    devices = dr.async_get(hass)
    device = devices.async_get_or_create(
        config_entry_id=source.entry_id, identifiers={("esphome", "x")}
    )
    assert device_area(hass, "no-such-device") is None
    assert device_area(hass, device.id) is None
    assert satellite_id(hass, _input(device.id)) is None
    area = ar.async_get(hass).async_create("Hall")
    devices.async_update_device(device.id, area_id=area.id)
    assert device_area(hass, device.id) == {"id": area.id, "name": "Hall", "floor": None}


async def test_user_names(hass: HomeAssistant) -> None:
    """No user, an unknown user, a system user: no name."""
    assert await user_name(hass, None) is None
    assert await user_name(hass, "no-such-user") is None
    system = await hass.auth.async_create_system_user("Supervisor")
    assert await user_name(hass, system.id) is None
    person = await hass.auth.async_create_user("Mom")
    assert await user_name(hass, person.id) == "Mom"
