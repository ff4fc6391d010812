"""homebot's URL as the config flow takes it, and the entry title made from it."""

from __future__ import annotations

from yarl import URL

from .client import HomebotInfo


def normalize_url(raw: str) -> str | None:
    """The URL as `scheme://host[:port]`, or None when it is not homebot's base URL:
    http or https, a host, and nothing after it (no path, query, fragment or user)."""
    try:
        url = URL(raw.strip())
    except (TypeError, ValueError):
        return None
    if url.scheme not in ("http", "https") or not url.host:
        return None
    if url.path not in ("", "/") or url.query_string or url.fragment:
        return None
    if url.user is not None or url.password is not None:
        return None
    return str(url.origin())


def entry_title(url: str, info: HomebotInfo) -> str:
    """A title that tells two homebots apart: the household, and always host:port."""
    parsed = URL(url)
    host = parsed.host or ""
    where = f"[{host}]:{parsed.port}" if ":" in host else f"{host}:{parsed.port}"
    if info.household:
        return f"homebot {info.household} ({where})"
    return f"homebot ({where})"
