"""Whether homebot is up, as the entity shows it: down after a failed turn or a failed
check, up after a turn or a check that worked. Each change is logged once (down as a
warning, back as info); failures while already down only at debug level."""

from __future__ import annotations

import logging
from collections.abc import Callable

_LOGGER = logging.getLogger(__package__)


class Availability:
    """homebot's up/down state; calls on_change when it flips."""

    def __init__(self, url: str, on_change: Callable[[], None]) -> None:
        """Start up: the setup has just reached homebot."""
        self._url = url
        self._on_change = on_change
        self.up = True

    def failed(self, reason: str) -> None:
        """A turn or a check did not reach homebot."""
        if not self.up:
            _LOGGER.debug("homebot at %s is still unavailable: %s", self._url, reason)
            return
        self.up = False
        _LOGGER.warning("homebot at %s is unavailable: %s", self._url, reason)
        self._on_change()

    def worked(self) -> None:
        """A turn or a check reached homebot."""
        if self.up:
            return
        self.up = True
        _LOGGER.info("homebot at %s is back", self._url)
        self._on_change()
