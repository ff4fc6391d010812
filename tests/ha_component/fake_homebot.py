"""A fake homebot for the tests: the two endpoints of the wire interface on a real
aiohttp server at 127.0.0.1, scripted per test, recording every ask."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer


class FakeHomebot:
    """homebot's /api/ha/info and /api/ha/conversation, as a test scripts them."""

    def __init__(self, token: str) -> None:
        """Up, with the given agent token, answering an empty reply."""
        self.token = token
        self.info: Any = {"name": "homebot", "version": "0.1.0", "household": None}
        self.info_status = 200
        self.turn_status = 200
        # each item: a frame (dict, sent as one line), raw bytes, or a float (a pause)
        self.frames: list[Any] = [reply("")]
        self.asks: list[dict[str, Any]] = []
        self.info_calls = 0
        self.port = 0
        self._server: TestServer | None = None

    @property
    def url(self) -> str:
        """The base URL."""
        return f"http://127.0.0.1:{self.port}"

    def _app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/api/ha/info", self._info)
        app.router.add_post("/api/ha/conversation", self._turn)
        return app

    async def start(self) -> None:
        """Listen (again, on the same port once it had one)."""
        self._server = TestServer(self._app(), host="127.0.0.1", port=self.port or None)
        await self._server.start_server()
        self.port = self._server.port

    async def stop(self) -> None:
        """Stop listening: connections are refused."""
        if self._server is not None:
            await self._server.close()
            self._server = None

    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bearer {self.token}"

    async def _info(self, request: web.Request) -> web.StreamResponse:
        self.info_calls += 1
        if not self._authorized(request):
            return web.Response(status=401)
        if self.info_status != 200:
            return web.Response(status=self.info_status)
        if isinstance(self.info, str):
            return web.Response(text=self.info, content_type="text/html")
        return web.json_response(self.info)

    async def _turn(self, request: web.Request) -> web.StreamResponse:
        if not self._authorized(request):
            return web.Response(status=401)
        self.asks.append(await request.json())
        if self.turn_status != 200:
            return web.Response(status=self.turn_status)
        resp = web.StreamResponse(headers={"Content-Type": "application/x-ndjson"})
        await resp.prepare(request)
        for item in self.frames:
            if isinstance(item, float):
                await asyncio.sleep(item)
            elif isinstance(item, bytes):
                await resp.write(item)
            else:
                await resp.write(json.dumps(item, ensure_ascii=False).encode() + b"\n")
        await resp.write_eof()
        return resp


def partial(text: str) -> dict[str, Any]:
    """A partial frame."""
    return {"type": "partial", "session_id": "s1", "text": text}


def reply(
    text: str,
    *,
    rest: str | None = None,
    state: str = "done",
    error: bool = False,
) -> dict[str, Any]:
    """A reply frame."""
    frame: dict[str, Any] = {
        "type": "reply",
        "session_id": "s1",
        "text": text,
        "dialogue_state": state,
        "error": error,
    }
    if rest is not None:
        frame["rest"] = rest
    return frame
