"""Fixtures of the integration's tests: HA's harness with custom integrations on, and a
fake homebot on 127.0.0.1 (the harness lets tests connect there only)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fake_homebot import FakeHomebot  # noqa: E402
from pytest_homeassistant_custom_component.common import MockConfigEntry  # noqa: E402

from homeassistant.core import HomeAssistant  # noqa: E402
from homeassistant.setup import async_setup_component  # noqa: E402

from custom_components.homebot.const import CONF_TOKEN, CONF_URL, DOMAIN  # noqa: E402

pytest_plugins = "pytest_homeassistant_custom_component"

TOKEN = "agent-token"


@pytest.fixture(autouse=True)
async def auto_enable_custom_integrations(
    hass: HomeAssistant, enable_custom_integrations: None
) -> None:
    """Let HA load custom_components/homebot, and set up the `homeassistant`
    integration that conversation needs (its exposed entities)."""
    assert await async_setup_component(hass, "homeassistant", {})


@pytest.fixture
async def homebot(socket_enabled: None) -> AsyncIterator[FakeHomebot]:
    """A fake homebot serving /api/ha/info and /api/ha/conversation. The harness
    blocks sockets; socket_enabled opens them again, and connections still go to
    127.0.0.1 only (the harness's socket_allow_hosts)."""
    fake = FakeHomebot(TOKEN)
    await fake.start()
    yield fake
    await fake.stop()


@pytest.fixture
def entry(homebot: FakeHomebot) -> MockConfigEntry:
    """An entry for the fake homebot, not yet added."""
    return MockConfigEntry(
        domain=DOMAIN,
        title=f"homebot (127.0.0.1:{homebot.port})",
        data={CONF_URL: homebot.url, CONF_TOKEN: TOKEN},
    )
