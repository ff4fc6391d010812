"""homebot's two endpoints, seen from Home Assistant: GET /api/ha/info (is homebot up,
and which version), and one POST per turn answered with newline-delimited JSON frames
(partials, then the reply). Everything homebot sends is bounded: a line of at most
MAX_LINE_BYTES, and SILENCE_SECONDS between frames."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import aiohttp

from .const import AGENT_PATH, INFO_PATH, MAX_LINE_BYTES, SILENCE_SECONDS


class HomebotError(Exception):
    """homebot could not be reached, or broke off."""


class InvalidAuth(HomebotError):
    """homebot refused the token."""


class InvalidCertificate(HomebotError):
    """homebot's TLS certificate was refused."""


@dataclass(frozen=True, slots=True)
class HomebotInfo:
    """What homebot says about itself."""

    name: str
    version: str
    household: str | None


def _info_from(body: Any) -> HomebotInfo:
    if not isinstance(body, dict) or not isinstance(body.get("version"), str):
        raise HomebotError("the answer is not homebot's info")
    household = body.get("household")
    return HomebotInfo(
        name=str(body.get("name") or "homebot"),
        version=body["version"],
        household=household if isinstance(household, str) and household else None,
    )


class HomebotClient:
    """Talks to one homebot."""

    def __init__(self, session: aiohttp.ClientSession, url: str, token: str) -> None:
        self._session = session
        self._base = url.rstrip("/")
        self._token = token

    @property
    def url(self) -> str:
        """homebot's base URL."""
        return self._base

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"}

    async def async_info(self) -> HomebotInfo:
        """homebot's name and version; checks the URL and the token."""
        try:
            async with asyncio.timeout(SILENCE_SECONDS):
                async with self._session.get(
                    self._base + INFO_PATH, headers=self._headers()
                ) as resp:
                    if resp.status == 401:
                        raise InvalidAuth
                    if resp.status != 200:
                        raise HomebotError(f"homebot answered {resp.status}")
                    try:
                        body = await resp.json(content_type=None)
                    except ValueError as err:
                        raise HomebotError("the answer is not homebot's info") from err
        except aiohttp.ClientSSLError as err:
            raise InvalidCertificate(str(err)) from err
        except (aiohttp.ClientError, TimeoutError) as err:
            raise HomebotError(str(err) or type(err).__name__) from err
        return _info_from(body)

    async def async_turn(self, ask: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        """The frames of one turn, as they come."""
        try:
            async with asyncio.timeout(SILENCE_SECONDS):
                resp = await self._session.post(
                    self._base + AGENT_PATH,
                    json=ask,
                    headers=self._headers(),
                    timeout=aiohttp.ClientTimeout(total=None, sock_connect=SILENCE_SECONDS),
                )
        except (aiohttp.ClientError, TimeoutError) as err:
            raise HomebotError(str(err) or type(err).__name__) from err
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
