"""What homebot is told with each turn besides the words: where the device stands (its
area and floor), which satellite heard it, who the HA user is, what else was said in
this conversation since homebot's last answer, and the automation's extra prompt that HA
keeps for the whole conversation (the wire interface of docs/home-assistant.md)."""

from __future__ import annotations

from typing import Any

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers import area_registry as ar
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers import floor_registry as fr

from .const import CHAT_LOG_MAX_CHARS, CHAT_LOG_MAX_ENTRIES

SATELLITE_DOMAIN = "assist_satellite"


def device_area(hass: HomeAssistant, device_id: str | None) -> dict[str, Any] | None:
    """The device's area {id, name, floor}; None without a device or an area."""
    if not device_id:
        return None
    device = dr.async_get(hass).async_get(device_id)
    if device is None or not device.area_id:
        return None
    area = ar.async_get(hass).async_get_area(device.area_id)
    if area is None:
        return None
    floor = None
    if area.floor_id and (found := fr.async_get(hass).async_get_floor(area.floor_id)):
        floor = found.name
    return {"id": area.id, "name": area.name, "floor": floor}


def satellite_id(
    hass: HomeAssistant, user_input: conversation.ConversationInput
) -> str | None:
    """The satellite HA names (newer HA), else the device's assist_satellite entity."""
    if named := getattr(user_input, "satellite_id", None):
        return str(named)
    if not user_input.device_id:
        return None
    entities = er.async_entries_for_device(
        er.async_get(hass), user_input.device_id, include_disabled_entities=False
    )
    satellites = sorted(
        e.entity_id for e in entities if e.domain == SATELLITE_DOMAIN
    )
    return satellites[0] if satellites else None


async def user_name(hass: HomeAssistant, user_id: str | None) -> str | None:
    """The HA user's display name; None for no user or a system user."""
    if not user_id:
        return None
    user = await hass.auth.async_get_user(user_id)
    if user is None or user.system_generated or not user.name:
        return None
    return user.name


def chat_log_since(
    chat_log: conversation.ChatLog, agent_id: str, text: str
) -> list[dict[str, Any]]:
    """What was said in this conversation that homebot did not write, since homebot's
    last answer, without the current turn's own words: at most CHAT_LOG_MAX_ENTRIES,
    each cut to CHAT_LOG_MAX_CHARS."""
    content = list(chat_log.content)
    if (
        content
        and isinstance(content[-1], conversation.UserContent)
        and content[-1].content == text
    ):
        content.pop()
    start = 0
    for index, entry in enumerate(content):
        if (
            isinstance(entry, conversation.AssistantContent)
            and entry.agent_id == agent_id
        ):
            start = index + 1
    entries: list[dict[str, Any]] = []
    for entry in content[start:]:
        if isinstance(entry, conversation.UserContent) and entry.content:
            entries.append({"role": "user", "text": entry.content, "agent_id": None})
        elif isinstance(entry, conversation.AssistantContent) and entry.content:
            entries.append(
                {"role": "assistant", "text": entry.content, "agent_id": entry.agent_id}
            )
    return [
        {**e, "text": e["text"][:CHAT_LOG_MAX_CHARS]}
        for e in entries[-CHAT_LOG_MAX_ENTRIES:]
    ]


async def build_ask(
    hass: HomeAssistant,
    user_input: conversation.ConversationInput,
    chat_log: conversation.ChatLog,
    agent_id: str,
) -> dict[str, Any]:
    """The body of one turn's POST. Keeps the extra system prompt on the chat log, as
    HA's own agents do, so the conversation's later turns carry it too."""
    extra = user_input.extra_system_prompt or chat_log.extra_system_prompt
    chat_log.extra_system_prompt = extra
    user_id = user_input.context.user_id
    return {
        "text": user_input.text,
        "conversation_id": chat_log.conversation_id,
        "device_id": user_input.device_id,
        "language": user_input.language,
        "user_id": user_id,
        "user_name": await user_name(hass, user_id),
        "satellite_id": satellite_id(hass, user_input),
        "area": device_area(hass, user_input.device_id),
        "extra_system_prompt": extra,
        "chat_log": chat_log_since(chat_log, agent_id, user_input.text),
    }
