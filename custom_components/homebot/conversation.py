"""The conversation entity: hands HA's words and the turn's context (ask.py) to homebot,
streams homebot's sentences into the chat log as they come
(async_add_delta_content_stream), joined exactly as homebot sent them, and keeps the
conversation open when homebot's reply waits for an answer (its dialogue state, not a
guess on punctuation). A reply flagged as an error, or an empty one, is an error
response; homebot unreachable, or silent for SILENCE_SECONDS, a short spoken error,
never a hung pipeline (homebot cancels the turn when the request goes away). The entity
is unavailable while homebot is down, checked every CHECK_INTERVAL."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from homeassistant.components import conversation
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent
from homeassistant.helpers.device_registry import DeviceEntryType, DeviceInfo
from homeassistant.helpers.entity_platform import AddConfigEntryEntitiesCallback
from homeassistant.helpers.event import async_track_time_interval

from . import HomebotConfigEntry
from .ask import build_ask
from .availability import Availability
from .client import HomebotError, InvalidAuth
from .const import CHECK_INTERVAL, DOMAIN

_LOGGER = logging.getLogger(__name__)

# no limit: each turn is its own request, and homebot takes several at once
PARALLEL_UPDATES = 0

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
    hass: HomeAssistant,
    entry: HomebotConfigEntry,
    async_add_entities: AddConfigEntryEntitiesCallback,
) -> None:
    """One conversation entity per homebot."""
    async_add_entities([HomebotConversationEntity(entry)])


@dataclass(slots=True)
class _Reply:
    """What the reply frame said, beyond the streamed text."""

    text: str = ""
    error: bool = False
    keep_open: bool = False


class HomebotConversationEntity(conversation.ConversationEntity):
    """homebot as an Assist conversation agent."""

    _attr_has_entity_name = True
    _attr_name = None
    # newer HA starts speaking the reply while it streams
    _attr_supports_streaming = True

    def __init__(self, entry: HomebotConfigEntry) -> None:
        """The entity of one entry, on a service device named like the entry."""
        self._entry = entry
        data = entry.runtime_data
        self._client = data.client
        self._availability = Availability(data.client.url, self._availability_changed)
        self._attr_unique_id = entry.entry_id
        self._attr_device_info = DeviceInfo(
            identifiers={(DOMAIN, entry.entry_id)},
            name=entry.title,
            manufacturer="homebot",
            model=data.info.name,
            sw_version=data.info.version,
            entry_type=DeviceEntryType.SERVICE,
            configuration_url=data.client.url,
        )

    @property
    def supported_languages(self) -> list[str] | Literal["*"]:
        """homebot takes any language."""
        return "*"

    @property
    def available(self) -> bool:
        """False while homebot is down."""
        return self._availability.up

    async def async_added_to_hass(self) -> None:
        """Start the periodic check."""
        await super().async_added_to_hass()
        self.async_on_remove(
            async_track_time_interval(
                self.hass, self._async_check, CHECK_INTERVAL, name="homebot check"
            )
        )

    def _availability_changed(self) -> None:
        if self.hass is not None and self.entity_id:
            self.async_write_ha_state()

    async def _async_check(self, _now: datetime) -> None:
        """Ask homebot whether it is up."""
        try:
            await self._client.async_info()
        except InvalidAuth:
            self._availability.failed("it refused the token")
            self._entry.async_start_reauth(self.hass)
        except HomebotError as err:
            self._availability.failed(str(err))
        else:
            self._availability.worked()

    async def _async_handle_message(
        self,
        user_input: conversation.ConversationInput,
        chat_log: conversation.ChatLog,
    ) -> conversation.ConversationResult:
        """One turn: the frames of homebot's answer into the chat log."""
        ask = await build_ask(self.hass, user_input, chat_log, self.entity_id)
        reply = _Reply()
        streamed: list[str] = []

        lang = "zh" if user_input.language.lower().startswith("zh") else "en"

        async def deltas() -> AsyncIterator[conversation.AssistantContentDeltaDict]:
            yield {"role": "assistant"}
            try:
                async for delta in frame_deltas():
                    yield delta
            except InvalidAuth:
                raise
            except HomebotError:
                if streamed:
                    # HA that speaks the stream (2025.7+: after its first 60 characters)
                    # never speaks the final response: the spoken error must be in the
                    # stream itself, or a homebot that breaks off ends in silence
                    yield {"content": ("" if lang == "zh" else " ") + ERROR_SPEECH[lang]}
                raise

        async def frame_deltas() -> AsyncIterator[conversation.AssistantContentDeltaDict]:
            async for frame in self._client.async_turn(ask):
                kind = frame.get("type")
                text = frame.get("text")
                if kind == "partial" and isinstance(text, str) and text:
                    streamed.append(text)
                    yield {"content": text}
                elif kind == "reply":
                    reply.text = text if isinstance(text, str) else ""
                    reply.error = frame.get("error") is True
                    reply.keep_open = frame.get("dialogue_state") == "continue"
                    rest = frame.get("rest") if streamed else reply.text
                    if isinstance(rest, str) and rest:
                        streamed.append(rest)
                        yield {"content": rest}

        response = intent.IntentResponse(language=user_input.language)
        try:
            async for _content in chat_log.async_add_delta_content_stream(
                self.entity_id, deltas()
            ):
                pass
        except InvalidAuth:
            self._availability.failed("it refused the token")
            self._entry.async_start_reauth(self.hass)
            return self._error(response, chat_log, AUTH_SPEECH[lang])
        except HomebotError as err:
            self._availability.failed(str(err))
            return self._error(response, chat_log, ERROR_SPEECH[lang])
        self._availability.worked()
        speech = "".join(streamed)
        if reply.error:
            _LOGGER.debug("homebot's turn failed: %s", reply.text)
            return self._error(response, chat_log, reply.text or ERROR_SPEECH[lang])
        if not speech:
            _LOGGER.debug("homebot answered with an empty reply")
            return self._error(response, chat_log, ERROR_SPEECH[lang])
        response.async_set_speech(speech)
        return conversation.ConversationResult(
            response=response,
            conversation_id=chat_log.conversation_id,
            continue_conversation=reply.keep_open,
        )

    @staticmethod
    def _error(
        response: intent.IntentResponse,
        chat_log: conversation.ChatLog,
        speech: str,
    ) -> conversation.ConversationResult:
        response.async_set_error(intent.IntentResponseErrorCode.UNKNOWN, speech)
        return conversation.ConversationResult(
            response=response, conversation_id=chat_log.conversation_id
        )
