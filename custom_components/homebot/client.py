"""homebot's agent endpoint, seen from Home Assistant: one POST per turn, answered with
newline-delimited JSON frames (partials, then the reply). Everything homebot sends is
bounded: a line of at most MAX_LINE_BYTES, and SILENCE_SECONDS between frames."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from .const import AGENT_PATH, MAX_LINE_BYTES, SILENCE_SECONDS


class HomebotError(Exception):
    """homebot could not be reached, or broke off."""


class InvalidAuth(HomebotError):
    """homebot refused the token."""


class HomebotClient:
    """Talks to one homebot."""

    def __init__(self, session: aiohttp.ClientSession, url: str, token: str) -> None:
        self._session = session
        self._url = url.rstrip("/") + AGENT_PATH
        self._token = token

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"}

    async def async_check(self) -> None:
        """Check the URL and the token without running a turn (empty words are refused
        with 400 once the token is right)."""
        try:
            async with asyncio.timeout(SILENCE_SECONDS):
                async with self._session.post(
                    self._url, json={"text": ""}, headers=self._headers()
                ) as resp:
                    if resp.status in (401, 403):
                        raise InvalidAuth
                    if resp.status != 400:
                        raise HomebotError(f"unexpected answer {resp.status}")
        except (aiohttp.ClientError, TimeoutError) as err:
            raise HomebotError(str(err)) from err

    async def async_turn(self, ask: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """The frames of one turn, as they come."""
        try:
            async with asyncio.timeout(SILENCE_SECONDS):
                resp = await self._session.post(
                    self._url,
                    json=ask,
                    headers=self._headers(),
                    timeout=aiohttp.ClientTimeout(total=None, sock_connect=SILENCE_SECONDS),
                )
        except (aiohttp.ClientError, TimeoutError) as err:
            raise HomebotError(str(err)) from err
        async with resp:
            if resp.status in (401, 403):
                raise InvalidAuth
            if resp.status != 200:
                raise HomebotError(f"homebot answered {resp.status}")
            buf = b""
            while True:
                try:
                    async with asyncio.timeout(SILENCE_SECONDS):
                        chunk = await resp.content.readany()
                except (aiohttp.ClientError, TimeoutError) as err:
                    raise HomebotError("homebot fell silent") from err
                if not chunk:
                    raise HomebotError("homebot ended the answer without a reply")
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if not line.strip():
                        continue
                    try:
                        frame = json.loads(line)
                    except ValueError as err:
                        raise HomebotError("homebot sent a broken frame") from err
                    if not isinstance(frame, dict):
                        raise HomebotError("homebot sent a broken frame")
                    yield frame
                    if frame.get("type") == "reply":
                        return
                if len(buf) > MAX_LINE_BYTES:
                    raise HomebotError("homebot sent a frame too long")
