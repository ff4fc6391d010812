"""An ESPHome voice satellite stand-in (like a Home Assistant Voice PE) for
tests/it/ha_real.rs: it speaks the ESPHome native API (plaintext frames: 0x00, varint
length, varint type, protobuf) well enough for Home Assistant's `esphome` integration to
add it as a real `assist_satellite` that supports announce and start_conversation.

- announce: answers VoiceAssistantAnnounceFinished(success).
- start_conversation (an announcement with start_conversation=true): after answering,
  it starts a voice pipeline itself, as the firmware does: VoiceAssistantRequest(start),
  then a second of audio over the API and the end of the audio, so HA's
  speech-to-text (the ASR stand-in) turns it into text for the conversation agent.
- SIGUSR1 is the wake word: it starts a voice pipeline the same way (no wake word stage
  on HA's side, as after an on-device wake word).
- After a reply whose VOICE_ASSISTANT_INTENT_END carried continue_conversation "1", it
  listens again once the reply's audio ended (VOICE_ASSISTANT_TTS_STREAM_END), as the
  firmware does: a new pipeline, no wake word and no start_conversation call.
- Every announcement and pipeline event HA sends is logged to events.jsonl in --outdir.

Run with the Home Assistant venv's python (it has aioesphomeapi):
    python fake_voice_pe.py --outdir DIR

(it listens on a port the kernel picks and reports it: listen.py)
"""

import argparse
import asyncio
import json
import signal
import time
from pathlib import Path

from aioesphomeapi import api_pb2 as pb
from aioesphomeapi.core import MESSAGE_TYPE_TO_PROTO

from listen import serve

TYPE_OF = {cls: num for num, cls in MESSAGE_TYPE_TO_PROTO.items()}
# VOICE_ASSISTANT | SPEAKER | API_AUDIO | ANNOUNCE | START_CONVERSATION
FEATURES = 1 | 2 | 4 | 16 | 32
# VoiceAssistantEventType (aioesphomeapi.model)
INTENT_END, TTS_STREAM_END = 6, 99


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


async def read_varint(r):
    shift = value = 0
    while True:
        b = (await r.readexactly(1))[0]
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value
        shift += 7


class Device:
    def __init__(self, args):
        self.args = args
        self.writer = None
        # the last reply asked something: listen again once it was played
        self.continue_conversation = False
        self.conversation_id = ""

    def log(self, **kw):
        with open(Path(self.args.outdir) / "events.jsonl", "a") as f:
            f.write(json.dumps({"t": time.time(), **kw}) + "\n")

    def send(self, msg):
        data = msg.SerializeToString()
        self.writer.write(b"\x00" + varint(len(data)) + varint(TYPE_OF[type(msg)]) + data)

    async def serve(self, reader, writer):
        self.writer = writer
        try:
            while True:
                if (await reader.readexactly(1)) != b"\x00":
                    return
                length = await read_varint(reader)
                kind = await read_varint(reader)
                body = await reader.readexactly(length)
                cls = MESSAGE_TYPE_TO_PROTO.get(kind)
                if cls is None:
                    continue
                msg = cls()
                msg.ParseFromString(body)
                await self.handle(msg)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def handle(self, m):
        if isinstance(m, pb.HelloRequest):
            self.send(pb.HelloResponse(api_version_major=1, api_version_minor=10,
                                       server_info="homebot test Voice PE stand-in", name=self.args.name))
        elif isinstance(m, pb.ConnectRequest):
            self.send(pb.ConnectResponse(invalid_password=False))
        elif isinstance(m, pb.DeviceInfoRequest):
            self.send(pb.DeviceInfoResponse(
                uses_password=False, name=self.args.name, mac_address="02:00:00:00:00:01",
                esphome_version="2025.4.0", compilation_time="", model="stand-in",
                manufacturer="homebot", friendly_name="Voice PE stand-in",
                voice_assistant_feature_flags=FEATURES))
        elif isinstance(m, pb.ListEntitiesRequest):
            self.send(pb.ListEntitiesDoneResponse())
        elif isinstance(m, pb.PingRequest):
            self.send(pb.PingResponse())
        elif isinstance(m, pb.DisconnectRequest):
            self.send(pb.DisconnectResponse())
        elif isinstance(m, pb.VoiceAssistantConfigurationRequest):
            self.send(pb.VoiceAssistantConfigurationResponse(max_active_wake_words=1))
        elif isinstance(m, pb.VoiceAssistantAnnounceRequest):
            self.log(type="announce", media_id=m.media_id, text=m.text,
                     start_conversation=m.start_conversation)
            self.send(pb.VoiceAssistantAnnounceFinished(success=True))
            if m.start_conversation:
                # the firmware listens right after the announcement: no wake word
                self.log(type="listening")
                self.listen("")
        elif isinstance(m, pb.VoiceAssistantResponse):
            self.log(type="pipeline-started", port=m.port, error=m.error)
            if not m.error:
                asyncio.get_running_loop().create_task(self.speak())
        elif isinstance(m, pb.VoiceAssistantEventResponse):
            data = {d.name: d.value for d in m.data}
            self.log(type="pipeline-event", event_type=m.event_type, data=data)
            if m.event_type == INTENT_END:
                self.continue_conversation = data.get("continue_conversation") == "1"
                self.conversation_id = data.get("conversation_id", "")
            elif m.event_type == TTS_STREAM_END and self.continue_conversation:
                # the reply asked something and was played: listen, no wake word
                self.continue_conversation = False
                self.log(type="listening-again", conversation_id=self.conversation_id)
                self.listen(self.conversation_id)
        elif isinstance(m, pb.VoiceAssistantAudio):
            pass  # the reply's audio
        else:
            self.log(type="message", name=type(m).__name__)

    def listen(self, conversation_id):
        """Start a voice pipeline (HA answers VoiceAssistantResponse, then it speaks)."""
        self.send(pb.VoiceAssistantRequest(
            start=True, conversation_id=conversation_id, flags=0,
            audio_settings=pb.VoiceAssistantAudioSettings(volume_multiplier=1.0)))

    def wake(self):
        """The wake word was heard (SIGUSR1)."""
        self.log(type="wake")
        self.listen("")

    async def speak(self):
        """A second of 16 kHz mono audio (its words are the ASR stand-in's), then its end
        (HA goes on to speech-to-text; a stop request would abort the pipeline)."""
        for _ in range(10):
            self.send(pb.VoiceAssistantAudio(data=bytes(3200)))
            await asyncio.sleep(0.01)
        self.send(pb.VoiceAssistantAudio(end=True))
        await self.writer.drain()


async def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--outdir", required=True)
    p.add_argument("--name", default="kitchen-voice-pe")
    a = p.parse_args()
    Path(a.outdir).mkdir(parents=True, exist_ok=True)

    # a Device per connection; the wake word goes to the newest one still open
    devices = []

    def wake():
        live = [d for d in devices if d.writer is not None and not d.writer.is_closing()]
        if live:
            live[-1].wake()
        else:
            Device(a).log(type="wake-ignored")

    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, wake)

    async def conn(reader, writer):
        device = Device(a)
        devices.append(device)
        try:
            await device.serve(reader, writer)
        finally:
            devices.remove(device)

    await serve(conn, a.port)


if __name__ == "__main__":
    asyncio.run(main())
