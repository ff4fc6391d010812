"""The entity is unavailable while homebot is down: after a failed turn or a failed 60 s
check, and back after one that works. Each change is logged once."""

from __future__ import annotations

from datetime import timedelta
from unittest.mock import patch

import pytest
from fake_homebot import FakeHomebot, partial, reply
from freezegun.api import FrozenDateTimeFactory
from pytest_homeassistant_custom_component.common import async_fire_time_changed
from test_conversation import agent, converse, speech  # noqa: F401

from homeassistant.components import conversation
from homeassistant.components.conversation import ConversationResult
from homeassistant.const import STATE_UNAVAILABLE
from homeassistant.core import HomeAssistant
from homeassistant.helpers import intent

from custom_components.homebot.conversation import AUTH_SPEECH, ERROR_SPEECH
from custom_components.homebot.const import DOMAIN

DOWN = "is unavailable"
BACK = "is back"


async def tick(hass: HomeAssistant, freezer: FrozenDateTimeFactory) -> None:
    """Let the 60 s check run once."""
    freezer.tick(timedelta(seconds=60))
    async_fire_time_changed(hass)
    # the check runs as a background task of HA's
    await hass.async_block_till_done(wait_background_tasks=True)


def is_error(result: ConversationResult, said: str) -> bool:
    """An error response saying this."""
    return (
        result.response.response_type is intent.IntentResponseType.ERROR
        and speech(result) == said
    )


async def test_failed_turn_then_check_brings_it_back(
    hass: HomeAssistant,
    homebot: FakeHomebot,
    agent: str,  # noqa: F811
    freezer: FrozenDateTimeFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """homebot stopped: the turn fails at once with the spoken error, the entity is
    unavailable, one warning for two failed turns; the next check finds it back."""
    await homebot.stop()
    result = await converse(hass, agent, "hi")
    assert is_error(result, ERROR_SPEECH["en"])
    assert hass.states.get(agent).state == STATE_UNAVAILABLE
    result = await converse(hass, agent, "你好", language="zh-cn")
    assert is_error(result, ERROR_SPEECH["zh"])
    await tick(hass, freezer)
    assert hass.states.get(agent).state == STATE_UNAVAILABLE
    assert caplog.text.count(DOWN) == 1
    await homebot.start()
    await tick(hass, freezer)
    assert hass.states.get(agent).state != STATE_UNAVAILABLE
    assert caplog.text.count(BACK) == 1
    await tick(hass, freezer)
    assert caplog.text.count(BACK) == 1


async def test_failed_check_then_turn_brings_it_back(
    hass: HomeAssistant,
    homebot: FakeHomebot,
    agent: str,  # noqa: F811
    freezer: FrozenDateTimeFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A failed check makes it unavailable (logged once over several checks); a turn
    that works while it is marked down makes it available again."""
    calls = homebot.info_calls
    await tick(hass, freezer)
    assert homebot.info_calls == calls + 1
    assert caplog.text.count(DOWN) == 0
    homebot.info_status = 503
    await tick(hass, freezer)
    await tick(hass, freezer)
    assert hass.states.get(agent).state == STATE_UNAVAILABLE
    assert caplog.text.count(DOWN) == 1
    homebot.frames = [reply("Here again.")]
    result = await converse(hass, agent, "are you there")
    assert speech(result) == "Here again."
    assert hass.states.get(agent).state != STATE_UNAVAILABLE
    assert caplog.text.count(BACK) == 1


async def test_check_refused_token_asks_for_it(
    hass: HomeAssistant,
    homebot: FakeHomebot,
    agent: str,  # noqa: F811
    freezer: FrozenDateTimeFactory,
) -> None:
    """A check answered 401: unavailable, and HA asks for the new token."""
    homebot.token = "rotated"
    await tick(hass, freezer)
    assert hass.states.get(agent).state == STATE_UNAVAILABLE
    flows = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
    assert [f["context"]["source"] for f in flows] == ["reauth"]


async def test_turn_refused_token_says_so_and_asks_for_it(
    hass: HomeAssistant, homebot: FakeHomebot, agent: str  # noqa: F811
) -> None:
    """A turn answered 401 says so aloud and starts the re-authentication."""
    homebot.token = "rotated"
    result = await converse(hass, agent, "你好", language="zh-Hans")
    assert is_error(result, AUTH_SPEECH["zh"])
    await hass.async_block_till_done()
    flows = hass.config_entries.flow.async_progress_by_handler(DOMAIN)
    assert [f["context"]["source"] for f in flows] == ["reauth"]


@pytest.mark.parametrize(
    "frames",
    [
        [partial("One."), b"{not json\n"],
        [b"[1, 2]\n"],
        [partial("One.")],
        [b"x" * (70 * 1024)],
    ],
    ids=["broken", "not-an-object", "no-reply", "too-long"],
)
async def test_broken_answers_fail_the_turn(
    hass: HomeAssistant,
    homebot: FakeHomebot,
    agent: str,  # noqa: F811
    frames: list[object],
) -> None:
    """A broken frame, an answer without a reply, or a line too long: the spoken
    error, and homebot counts as down."""
    homebot.frames = frames
    result = await converse(hass, agent, "hi")
    assert is_error(result, ERROR_SPEECH["en"])
    assert hass.states.get(agent).state == STATE_UNAVAILABLE


@pytest.mark.parametrize(
    ("language", "separator", "lang"), [("en", " ", "en"), ("zh-cn", "", "zh")]
)
async def test_broken_off_stream_ends_in_the_spoken_error_in_the_stream(
    hass: HomeAssistant,
    homebot: FakeHomebot,
    agent: str,  # noqa: F811
    language: str,
    separator: str,
    lang: str,
) -> None:
    """homebot breaks off after a streamed sentence: the spoken error is streamed after
    it (an HA that speaks the stream never speaks the final response), and the answer is
    the error."""
    homebot.frames = [partial("One.")]
    streamed: list[str] = []
    add = conversation.ChatLog.async_add_delta_content_stream

    def tee(self, agent_id, stream):  # type: ignore[no-untyped-def]
        # what reaches the chat log's delta listener (the pipeline's streamed TTS)
        async def seen():  # type: ignore[no-untyped-def]
            async for delta in stream:
                streamed.append(delta.get("content") or "")
                yield delta

        return add(self, agent_id, seen())

    with patch.object(conversation.ChatLog, "async_add_delta_content_stream", tee):
        result = await converse(hass, agent, "hi", language=language)
    assert is_error(result, ERROR_SPEECH[lang])
    assert "".join(streamed) == "One." + separator + ERROR_SPEECH[lang]


async def test_status_other_than_200_fails_the_turn(
    hass: HomeAssistant, homebot: FakeHomebot, agent: str  # noqa: F811
) -> None:
    """homebot answering 500 is a failed turn."""
    homebot.turn_status = 500
    result = await converse(hass, agent, "hi")
    assert is_error(result, ERROR_SPEECH["en"])


async def test_silent_homebot_fails_the_turn(
    hass: HomeAssistant, homebot: FakeHomebot, agent: str  # noqa: F811
) -> None:
    """No frame within the silence limit: the spoken error, not a hung pipeline."""
    homebot.frames = [partial("Thinking."), 0.5, reply("late")]
    with patch("custom_components.homebot.client.SILENCE_SECONDS", 0.1):
        result = await converse(hass, agent, "hi")
    assert is_error(result, ERROR_SPEECH["en"])
