"""A Wyoming speech-to-text stand-in for tests/it/ha_real.rs: whatever audio it gets, the
transcripts are the --text arguments, one per utterance in order (the last one repeats):
what the user says. Home Assistant's `wyoming` integration adds it as an `stt.*` entity
for the voice pipeline. It listens on a port the kernel picks and reports it (listen.py).

    python fake_asr.py --text 我要做番茄炒鸡蛋 --text 打好了
"""

import argparse
import asyncio
from functools import partial

from wyoming.asr import Transcript
from wyoming.audio import AudioStop
from wyoming.info import AsrModel, AsrProgram, Attribution, Describe, Info
from wyoming.server import AsyncEventHandler

from listen import serve_wyoming


class Handler(AsyncEventHandler):
    def __init__(self, texts, *a, **kw):
        super().__init__(*a, **kw)
        self.texts = texts

    async def handle_event(self, event):
        if Describe.is_type(event.type):
            attribution = Attribution(name="homebot", url="http://127.0.0.1/")
            model = AsrModel(name="fixed", attribution=attribution, installed=True,
                             description="fixed transcript", version="0.1", languages=["zh", "en"])
            await self.write_event(Info(asr=[AsrProgram(
                name="fixed-asr", attribution=attribution, installed=True,
                description="fixed transcript", version="0.1", models=[model])]).event())
        elif AudioStop.is_type(event.type):
            text = self.texts.pop(0) if len(self.texts) > 1 else self.texts[0]
            await self.write_event(Transcript(text=text).event())
            return False
        return True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--text", action="append", required=True)
    a = p.parse_args()
    asyncio.run(serve_wyoming(partial(Handler, a.text), a.port))


if __name__ == "__main__":
    main()
