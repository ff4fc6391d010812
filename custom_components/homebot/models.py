"""What a loaded homebot entry keeps: its client and what homebot said at setup."""

from __future__ import annotations

from dataclasses import dataclass

from .client import HomebotClient, HomebotInfo


@dataclass(slots=True)
class HomebotData:
    """The runtime data of one entry."""

    client: HomebotClient
    info: HomebotInfo
