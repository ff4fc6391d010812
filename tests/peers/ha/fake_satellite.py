"""A Wyoming satellite stand-in for tests/it/ha_real.rs: Home Assistant's `wyoming`
integration adds it as a real `assist_satellite` entity (announce supported). It answers
`describe` with its info and `ping` with `pong` (without a pong HA drops it every ~8 s),
records every announcement HA streams to it as announce-N.wav, answers `played`, and logs
each event but audio chunks and pings to events.jsonl in --outdir.

Run with the Home Assistant venv's python (it has `wyoming`):
    python fake_satellite.py --outdir DIR
(it listens on a port the kernel picks and reports it: listen.py).
"""

import argparse
import asyncio
import json
import time
import wave
from functools import partial
from pathlib import Path

from wyoming.audio import AudioChunk, AudioStart, AudioStop
from wyoming.info import Attribution, Describe, Info, Satellite
from wyoming.ping import Ping, Pong
from wyoming.server import AsyncEventHandler
from wyoming.snd import Played

from listen import serve_wyoming


class Handler(AsyncEventHandler):
    def __init__(self, args, state, *a, **kw):
        super().__init__(*a, **kw)
        self.args, self.state, self.wav, self.nbytes = args, state, None, 0

    def log(self, **kw):
        with open(Path(self.args.outdir) / "events.jsonl", "a") as f:
            f.write(json.dumps({"t": time.time(), **kw}) + "\n")

    async def handle_event(self, event):
        if event.type not in ("audio-chunk", "ping"):
            self.log(type=event.type, data=event.data)
        if Ping.is_type(event.type):
            await self.write_event(Pong(text=Ping.from_event(event).text).event())
        elif Describe.is_type(event.type):
            info = Info(
                satellite=Satellite(
                    name=self.args.name,
                    description="homebot test satellite",
                    installed=True,
                    version="0.1",
                    area=None,
                    attribution=Attribution(name="homebot", url="http://127.0.0.1/"),
                )
            )
            await self.write_event(info.event())
        elif AudioStart.is_type(event.type):
            st = AudioStart.from_event(event)
            self.state["n"] += 1
            path = Path(self.args.outdir) / f"announce-{self.state['n']}.wav"
            self.wav = wave.open(str(path), "wb")
            self.wav.setframerate(st.rate)
            self.wav.setsampwidth(st.width)
            self.wav.setnchannels(st.channels)
            self.nbytes = 0
        elif AudioChunk.is_type(event.type) and self.wav is not None:
            ch = AudioChunk.from_event(event)
            self.wav.writeframes(ch.audio)
            self.nbytes += len(ch.audio)
        elif AudioStop.is_type(event.type) and self.wav is not None:
            self.wav.close()
            self.wav = None
            self.log(type="announcement-recorded", n=self.state["n"], bytes=self.nbytes)
            await self.write_event(Played().event())
        return True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--outdir", default=".")
    p.add_argument("--name", default="Test Satellite")
    a = p.parse_args()
    Path(a.outdir).mkdir(parents=True, exist_ok=True)
    asyncio.run(serve_wyoming(partial(Handler, a, {"n": 0}), a.port))


if __name__ == "__main__":
    main()
