"""The conversation entity: hands HA's words, conversation, device, user, language and an
automation's extra_system_prompt to homebot, streams homebot's sentences into the chat
log as they come (async_add_delta_content_stream), and keeps the conversation open when
homebot's reply waits for an answer (its dialogue state, not a guess on punctuation).
homebot unreachable, or silent for SILENCE_SECONDS: a short spoken error, never a hung
pipeline (homebot cancels the turn when the request goes away)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any, Literal

from homeassistant.components import conversation
from homeassistant.config_entries import ConfigEntry
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent
from homeassistant.helpers.entity_platform import AddEntitiesCallback

from .client import HomebotClient, HomebotError, InvalidAuth
from .const import DOMAIN

_LOGGER = logging.getLogger(__name__)

ERROR_SPEECH = {
    "zh": "抱歉，homebot 暂时没有回应。",
    "en": "Sorry, homebot is not answering right now.",
}
# homebot refused the token: Home Assistant asks for the new one (a repair notice)
AUTH_SPEECH = {
    "zh": "homebot 拒绝了令牌，请在 Home Assistant 里重新输入。",
    "en": "homebot refused the token; enter the new one in Home Assistant.",
}


async def async_setup_entry(
    hass: HomeAssistant, entry: ConfigEntry, async_add_entities: AddEntitiesCallback
) -> None:
    """One conversation entity per homebot."""
    async_add_entities([HomebotConversationEntity(entry)])


class HomebotConversationEntity(conversation.ConversationEntity):
    """homebot as an Assist conversation agent."""

    _attr_has_entity_name = True
    _attr_name = None
    # newer HA starts speaking the reply while it streams
    _attr_supports_streaming = True

    def __init__(self, entry: ConfigEntry) -> None:
        self._entry = entry
        self._attr_unique_id = entry.entry_id
        self._attr_device_info = {
            "identifiers": {(DOMAIN, entry.entry_id)},
            "name": "homebot",
            "manufacturer": "homebot",
        }

    @property
    def supported_languages(self) -> list[str] | Literal["*"]:
        return "*"

    async def _async_handle_message(
        self,
        user_input: conversation.ConversationInput,
        chat_log: conversation.ChatLog,
    ) -> conversation.ConversationResult:
        client: HomebotClient = self._entry.runtime_data
        ask = {
            "text": user_input.text,
            "conversation_id": chat_log.conversation_id,
            "device_id": user_input.device_id,
            "language": user_input.language,
            "user_id": user_input.context.user_id,
            "extra_system_prompt": user_input.extra_system_prompt,
        }
        ended: dict[str, Any] = {"continue": False}

        async def deltas() -> AsyncIterator[conversation.AssistantContentDeltaDict]:
            yield {"role": "assistant"}
            streamed = False
            async for frame in client.async_turn(ask):
                kind = frame.get("type")
                text = frame.get("text")
                if kind == "partial" and isinstance(text, str) and text:
                    streamed = True
                    yield {"content": text}
                elif kind == "reply":
                    rest = frame.get("rest") if streamed else text
                    if isinstance(rest, str) and rest:
                        yield {"content": (" " if streamed else "") + rest}
                    ended["continue"] = frame.get("dialogue_state") == "continue"

        response = intent.IntentResponse(language=user_input.language)
        lang = "zh" if user_input.language.lower().startswith("zh") else "en"
        try:
            async for _content in chat_log.async_add_delta_content_stream(
                self.entity_id, deltas()
            ):
                pass
        except InvalidAuth:
            _LOGGER.warning("homebot refused the token; asking for the new one")
            self._entry.async_start_reauth(self.hass)
            response.async_set_error(
                intent.IntentResponseErrorCode.UNKNOWN, AUTH_SPEECH[lang]
            )
            return conversation.ConversationResult(
                response=response, conversation_id=chat_log.conversation_id
            )
        except HomebotError as err:
            _LOGGER.warning("homebot did not answer: %s", err)
            response.async_set_error(
                intent.IntentResponseErrorCode.UNKNOWN, ERROR_SPEECH[lang]
            )
            return conversation.ConversationResult(
                response=response, conversation_id=chat_log.conversation_id
            )
        last = chat_log.content[-1]
        speech = last.content if isinstance(last, conversation.AssistantContent) else ""
        response.async_set_speech(speech or "")
        return conversation.ConversationResult(
            response=response,
            conversation_id=chat_log.conversation_id,
            continue_conversation=ended["continue"],
        )
