"""A Home Assistant-like Wyoming client, built on the real `wyoming` package.

Usage (prints one JSON document on stdout):
  wyoming_client.py HOST PORT describe
  wyoming_client.py HOST PORT transcript TEXT CONVERSATION_ID [SPEAKER]
  wyoming_client.py HOST PORT ha-transcript TEXT CONVERSATION_ID [SPEAKER]
                                                # the context as Home Assistant 2025.4
                                                # sends it: the conversation id alone
                                                # (and a speaker id when given); homebot
                                                # learns the satellite from HA itself
  wyoming_client.py HOST PORT many N            # N satellites at once
  wyoming_client.py HOST PORT garbage           # a bad frame beside a good transcript
"""

import asyncio
import json
import sys

from wyoming.asr import Transcript
from wyoming.client import AsyncTcpClient
from wyoming.handle import Handled, NotHandled
from wyoming.info import Describe, Info


async def describe(host, port):
    async with AsyncTcpClient(host, port) as client:
        await client.write_event(Describe().event())
        event = await asyncio.wait_for(client.read_event(), 30)
        assert Info.is_type(event.type), event
        info = Info.from_event(event)
        return {
            "handle": [
                {
                    "name": p.name,
                    "installed": p.installed,
                    "languages": [lang for m in p.models for lang in m.languages],
                    "supports_handled_streaming": p.supports_handled_streaming,
                }
                for p in info.handle
            ],
            "asr": len(info.asr),
        }


async def transcript(host, port, text, conversation_id, speaker=None, satellite="kitchen"):
    # Home Assistant opens a new connection for every utterance.
    context = {"conversation_id": conversation_id}
    if satellite:
        context.update({"satellite_id": satellite, "device_id": "dev-" + satellite})
    if speaker:
        context["speaker_id"] = speaker
    async with AsyncTcpClient(host, port) as client:
        await client.write_event(Transcript(text=text, language="zh", context=context).event())
        while True:
            event = await asyncio.wait_for(client.read_event(), 60)
            if event is None:
                return {"type": "closed"}
            if Handled.is_type(event.type):
                h = Handled.from_event(event)
                return {"type": "handled", "text": h.text, "context": h.context}
            if NotHandled.is_type(event.type):
                h = NotHandled.from_event(event)
                return {"type": "not-handled", "text": h.text, "context": h.context}


async def many(host, port, n):
    jobs = [
        transcript(host, port, f"卫星{i}在问", f"conv-sat-{i}", None, f"sat-{i}")
        for i in range(n)
    ]
    return await asyncio.gather(*jobs)


async def garbage(host, port):
    reader, writer = await asyncio.open_connection(host, port)
    good = asyncio.create_task(transcript(host, port, "正常的问题", "conv-good"))
    writer.write(b"this is not a wyoming frame\n")
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(65536), 30)
    closed = (await asyncio.wait_for(reader.read(1), 30)) == b""
    writer.close()
    return {"bad_connection_answer": answer.decode("utf-8", "replace"), "bad_connection_closed": closed, "good": await good}


async def main():
    host, port, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    args = sys.argv[4:]
    if cmd == "describe":
        out = await describe(host, port)
    elif cmd == "transcript":
        out = await transcript(host, port, *args)
    elif cmd == "ha-transcript":
        text, conversation_id = args[0], args[1]
        speaker = args[2] if len(args) > 2 else None
        out = await transcript(host, port, text, conversation_id, speaker, satellite=None)
    elif cmd == "many":
        out = await many(host, port, int(args[0]))
    elif cmd == "garbage":
        out = await garbage(host, port)
    else:
        raise SystemExit(f"unknown command {cmd}")
    print(json.dumps(out, ensure_ascii=False))


asyncio.run(main())
