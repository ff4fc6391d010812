#!/usr/bin/env python3
"""Draw the integration's brand images (custom_components/homebot/brand/): a house
whose two round windows read as a bot's eyes, in Home Assistant blue on a transparent
background. Standard library only (a zlib PNG writer), antialiased by 4x4
supersampling. Run again after changing the drawing: python3 scripts/draw_brand.py"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "custom_components" / "homebot" / "brand"
COLOR = (3, 169, 244)  # Home Assistant's blue
HOUSE = [(0.5, 0.08), (0.95, 0.5), (0.83, 0.5), (0.83, 0.92), (0.17, 0.92),
         (0.17, 0.5), (0.05, 0.5)]
DOOR = (0.42, 0.66, 0.58, 0.92)  # x0, y0, x1, y1, cut out
EYES = [(0.37, 0.55, 0.055), (0.63, 0.55, 0.055)]  # x, y, radius, cut out
SAMPLES = 4


def inside_polygon(x: float, y: float, poly: list[tuple[float, float]]) -> bool:
    """Even-odd rule."""
    hit = False
    j = len(poly) - 1
    for i, (xi, yi) in enumerate(poly):
        xj, yj = poly[j]
        if (yi > y) != (yj > y) and x < (xj - xi) * (y - yi) / (yj - yi) + xi:
            hit = not hit
        j = i
    return hit


def covered(x: float, y: float) -> bool:
    """Whether a point of the unit square is ink."""
    if not inside_polygon(x, y, HOUSE):
        return False
    x0, y0, x1, y1 = DOOR
    if x0 <= x <= x1 and y0 <= y <= y1:
        return False
    return all((x - ex) ** 2 + (y - ey) ** 2 > r * r for ex, ey, r in EYES)


def draw(size: int) -> bytes:
    """RGBA rows of the image, each prefixed by PNG's filter byte 0."""
    rows = bytearray()
    step = 1.0 / (size * SAMPLES)
    for py in range(size):
        rows.append(0)
        for px in range(size):
            hits = sum(
                covered((px * SAMPLES + sx + 0.5) * step, (py * SAMPLES + sy + 0.5) * step)
                for sx in range(SAMPLES)
                for sy in range(SAMPLES)
            )
            alpha = round(255 * hits / (SAMPLES * SAMPLES))
            rows.extend((*COLOR, alpha))
    return bytes(rows)


def png(size: int) -> bytes:
    """A size x size RGBA PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(draw(size), 9))
        + chunk(b"IEND", b"")
    )


def main() -> None:
    """Write icon.png (256), icon@2x.png (512), logo.png and logo@2x.png (the same)."""
    OUT.mkdir(parents=True, exist_ok=True)
    for size, names in ((256, ("icon.png", "logo.png")), (512, ("icon@2x.png", "logo@2x.png"))):
        data = png(size)
        for name in names:
            (OUT / name).write_bytes(data)
            print(f"{OUT / name}: {size}x{size}, {len(data)} bytes")


if __name__ == "__main__":
    main()
