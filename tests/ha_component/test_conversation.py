"""The conversation entity: homebot's frames into HA's answer and chat log, error and
empty replies, and the turn's context."""

from __future__ import annotations

import pytest
from fake_homebot import FakeHomebot, partial, reply
from pytest_homeassistant_custom_component.common import MockConfigEntry

from homeassistant.components import conversation
from homeassistant.components.conversation.agent_manager import async_get_agent
from homeassistant.core import Context, HomeAssistant
from homeassistant.helpers import area_registry as ar
from homeassistant.helpers import chat_session
from homeassistant.helpers import device_registry as dr
from homeassistant.helpers import entity_registry as er
from homeassistant.helpers import floor_registry as fr
from homeassistant.helpers import intent

from custom_components.homebot.conversation import ERROR_SPEECH
from custom_components.homebot.const import DOMAIN


@pytest.fixture
async def agent(
    hass: HomeAssistant, homebot: FakeHomebot, entry: MockConfigEntry
) -> str:
    """The loaded entry's conversation entity id."""
    entry.add_to_hass(hass)
    assert await hass.config_entries.async_setup(entry.entry_id)
    await hass.async_block_till_done()
    entity_id = er.async_get(hass).async_get_entity_id(
        "conversation", DOMAIN, entry.entry_id
    )
    assert entity_id
    return entity_id


async def converse(
    hass: HomeAssistant,
    agent: str,
    text: str,
    *,
    conversation_id: str | None = None,
    language: str = "en",
    context: Context | None = None,
    device_id: str | None = None,
    extra_system_prompt: str | None = None,
) -> conversation.ConversationResult:
    """One turn through HA's conversation API."""
    return await conversation.async_converse(
        hass,
        text,
        conversation_id,
        context or Context(),
        language=language,
        agent_id=agent,
        device_id=device_id,
        extra_system_prompt=extra_system_prompt,
    )


def speech(result: conversation.ConversationResult) -> str:
    """The plain speech of a result."""
    return result.response.speech["plain"]["speech"]


def stored_log(hass: HomeAssistant, conversation_id: str) -> list[object]:
    """The chat log HA kept for a conversation."""
    return hass.data[conversation.chat_log.DATA_CHAT_LOGS][conversation_id].content


async def test_partials_and_rest_joined_unchanged_english(
    hass: HomeAssistant, homebot: FakeHomebot, agent: str
) -> None:
    """English partials carry their own leading space; nothing is added between."""
    homebot.frames = [
        {"type": "waiting"},
        partial("It is sunny."),
        partial(" Take a hat?"),
        reply("It is sunny. Take a hat? Or not.", rest=" Or not.", state="continue"),
    ]
    result = await converse(hass, agent, "weather?")
    assert result.response.response_type is intent.IntentResponseType.ACTION_DONE
    assert speech(result) == "It is sunny. Take a hat? Or not."
    assert result.continue_conversation is True
    last = stored_log(hass, result.conversation_id)[-1]
    assert isinstance(last, conversation.AssistantContent)
    assert last.agent_id == agent
    assert last.content == "It is sunny. Take a hat? Or not."


async def test_partials_and_rest_joined_unchanged_chinese(
    hass: HomeAssistant, homebot: FakeHomebot, agent: str
) -> None:
    """Chinese sentences join with no separator at all."""
    homebot.frames = [
        partial("番茄炒蛋要两个番茄。"),
        partial("先炒蛋。"),
        reply("番茄炒蛋要两个番茄。先炒蛋。再炒番茄。", rest="再炒番茄。"),
    ]
    result = await converse(hass, agent, "番茄炒蛋怎么做", language="zh-cn")
    assert speech(result) == "番茄炒蛋要两个番茄。先炒蛋。再炒番茄。"
    assert result.continue_conversation is False


async def test_reply_without_partials(
    hass: HomeAssistant, homebot: FakeHomebot, agent: str
) -> None:
    """A reply alone is spoken whole; its rest (absent) does not matter."""
    homebot.frames = [reply("Done.")]
    result = await converse(hass, agent, "lights off")
    assert speech(result) == "Done."


async def test_partials_without_rest(
    hass: HomeAssistant, homebot: FakeHomebot, agent: str
) -> None:
    """When the partials said everything, the reply's text is not said twice."""
    homebot.frames = [partial("One."), partial(" Two."), reply("One. Two.", rest="")]
    result = await converse(hass, agent, "count")
    assert speech(result) == "One. Two."


@pytest.mark.parametrize(
    ("language", "frames", "expected"),
    [
        ("en", [reply("The model is down, try later.", error=True)],
         "The model is down, try later."),
        ("zh-Hans", [reply("模型暂时不可用。", error=True)], "模型暂时不可用。"),
        ("en", [partial("Let me"), reply("Let me", rest="", error=True)], "Let me"),
        ("en", [reply("", error=True)], ERROR_SPEECH["en"]),
        ("zh-cn", [reply("", error=True)], ERROR_SPEECH["zh"]),
    ],
)
async def test_error_flag_is_an_error_response(
    hass: HomeAssistant,
    homebot: FakeHomebot,
    agent: str,
    language: str,
    frames: list[dict[str, object]],
    expected: str,
) -> None:
    """error: true is an error response that keeps homebot's spoken explanation."""
    homebot.frames = frames
    result = await converse(hass, agent, "hi", language=language)
    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert result.response.error_code is intent.IntentResponseErrorCode.UNKNOWN
    assert speech(result) == expected
    assert result.continue_conversation is False
    assert hass.states.get(agent).state != "unavailable"


@pytest.mark.parametrize("frames", [[reply("")], [{"type": "waiting"}, reply("", rest="")]])
async def test_empty_reply_is_an_error(
    hass: HomeAssistant, homebot: FakeHomebot, agent: str, frames: list[object]
) -> None:
    """A reply with nothing to say is an error response, not silence."""
    homebot.frames = frames
    result = await converse(hass, agent, "hi")
    assert result.response.response_type is intent.IntentResponseType.ERROR
    assert speech(result) == ERROR_SPEECH["en"]


async def test_chat_log_forwarded_since_homebots_last_answer(
    hass: HomeAssistant, homebot: FakeHomebot, agent: str
) -> None:
    """A command HA handled itself in the same conversation reaches homebot's next ask,
    and what homebot said itself does not come back."""
    homebot.frames = [reply("Hello, what can I do?", state="continue")]
    first = await converse(hass, agent, "hello")
    conversation_id = first.conversation_id
    assert homebot.asks[0]["chat_log"] == []
    # HA's own agent handles a command in this conversation (prefer local intents)
    with (
        chat_session.async_get_chat_session(hass, conversation_id) as session,
        conversation.async_get_chat_log(hass, session) as chat_log,
    ):
        chat_log.async_add_user_content(
            conversation.UserContent(content="turn on the kitchen light")
        )
        chat_log.async_add_assistant_content_without_tools(
            conversation.AssistantContent(
                agent_id="conversation.home_assistant", content="Turned on the light"
            )
        )
    homebot.frames = [reply("Anything else?")]
    await converse(hass, agent, "thanks", conversation_id=conversation_id)
    assert homebot.asks[1]["conversation_id"] == conversation_id
    assert homebot.asks[1]["text"] == "thanks"
    assert homebot.asks[1]["chat_log"] == [
        {"role": "user", "text": "turn on the kitchen light", "agent_id": None},
        {
            "role": "assistant",
            "text": "Turned on the light",
            "agent_id": "conversation.home_assistant",
        },
    ]
    # homebot answered since: nothing new to forward
    await converse(hass, agent, "bye", conversation_id=conversation_id)
    assert homebot.asks[2]["chat_log"] == []


async def test_chat_log_forwarded_bounded(
    hass: HomeAssistant, homebot: FakeHomebot, agent: str
) -> None:
    """At most the last 8 entries, each cut to 1000 characters."""
    homebot.frames = [reply("ok")]
    with (
        chat_session.async_get_chat_session(hass, "conv-bounded") as session,
        conversation.async_get_chat_log(hass, session) as chat_log,
    ):
        for n in range(10):
            chat_log.async_add_user_content(conversation.UserContent(content=f"u{n}"))
            chat_log.async_add_assistant_content_without_tools(
                conversation.AssistantContent(
                    agent_id="conversation.home_assistant", content=f"a{n}" + "x" * 2000
                )
            )
    await converse(hass, agent, "now", conversation_id="conv-bounded")
    sent = homebot.asks[0]["chat_log"]
    assert len(sent) == 8
    assert sent[0] == {"role": "user", "text": "u6", "agent_id": None}
    assert sent[-1]["text"] == ("a9" + "x" * 2000)[:1000]
    assert all(len(e["text"]) <= 1000 for e in sent)


async def test_extra_system_prompt_kept_across_turns(
    hass: HomeAssistant, homebot: FakeHomebot, agent: str
) -> None:
    """An automation's extra prompt goes with every later turn of the conversation,
    until another replaces it."""
    homebot.frames = [reply("Did you take the bins out?", state="continue")]
    first = await converse(
        hass, agent, "", extra_system_prompt="Ask whether the bins are out."
    )
    await converse(hass, agent, "not yet", conversation_id=first.conversation_id)
    assert homebot.asks[1]["extra_system_prompt"] == "Ask whether the bins are out."
    await converse(
        hass,
        agent,
        "yes",
        conversation_id=first.conversation_id,
        extra_system_prompt="Now about the laundry.",
    )
    assert homebot.asks[2]["extra_system_prompt"] == "Now about the laundry."
    other = await converse(hass, agent, "hi")
    assert other.conversation_id != first.conversation_id
    assert homebot.asks[3]["extra_system_prompt"] is None


async def test_area_satellite_and_user_name_sent(
    hass: HomeAssistant,
    homebot: FakeHomebot,
    entry: MockConfigEntry,
    agent: str,
    hass_admin_user: object,
) -> None:
    """A device in an area on a floor, its satellite entity and the HA user's name."""
    floor = fr.async_get(hass).async_create("Ground floor")
    area = ar.async_get(hass).async_create("Kitchen", floor_id=floor.floor_id)
    satellite_entry = MockConfigEntry(domain="esphome")
    satellite_entry.add_to_hass(hass)
    device = dr.async_get(hass).async_get_or_create(
        config_entry_id=satellite_entry.entry_id,
        identifiers={("esphome", "voice-pe")},
        name="Voice PE",
    )
    dr.async_get(hass).async_update_device(device.id, area_id=area.id)
    entities = er.async_get(hass)
    for unique_id, suggested in (("s2", "voice_pe_b"), ("s1", "voice_pe_a")):
        entities.async_get_or_create(
            "assist_satellite",
            "esphome",
            unique_id,
            device_id=device.id,
            suggested_object_id=suggested,
        )
    entities.async_get_or_create(
        "media_player", "esphome", "mp", device_id=device.id
    )
    homebot.frames = [reply("ok")]
    await converse(
        hass,
        agent,
        "what's cooking",
        device_id=device.id,
        context=Context(user_id=hass_admin_user.id),
    )
    ask = homebot.asks[0]
    assert ask["device_id"] == device.id
    assert ask["area"] == {"id": area.id, "name": "Kitchen", "floor": "Ground floor"}
    assert ask["satellite_id"] == "assist_satellite.voice_pe_a"
    assert ask["user_id"] == hass_admin_user.id
    assert ask["user_name"] == hass_admin_user.name
    assert ask["language"] == "en"


async def test_no_device_no_user(
    hass: HomeAssistant, homebot: FakeHomebot, agent: str
) -> None:
    """Typed Assist without a user: the new fields are null and the log empty; any
    language is taken."""
    homebot.frames = [reply("ok")]
    await converse(hass, agent, "hi")
    ask = homebot.asks[0]
    for key in ("device_id", "user_id", "user_name", "satellite_id", "area"):
        assert ask[key] is None, key
    assert ask["chat_log"] == []
    entity = async_get_agent(hass, agent)
    assert entity is not None
    assert entity.supported_languages == "*"
