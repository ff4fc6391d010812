"""The integration's files beside its code: manifest, hacs.json, translations, the
quality-scale file and the brand images."""

from __future__ import annotations

import json
import re
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "custom_components" / "homebot"

# hassfest's rules (script/hassfest/quality_scale.py), bronze to platinum
RULES = """
action-setup appropriate-polling brands common-modules config-flow
config-flow-test-coverage dependency-transparency docs-actions
docs-high-level-description docs-installation-instructions docs-removal-instructions
entity-event-setup entity-unique-id has-entity-name runtime-data test-before-configure
test-before-setup unique-config-entry
action-exceptions config-entry-unloading docs-configuration-parameters
docs-installation-parameters entity-unavailable integration-owner log-when-unavailable
parallel-updates reauthentication-flow test-coverage
devices diagnostics discovery discovery-update-info docs-data-update docs-examples
docs-known-limitations docs-supported-devices docs-supported-functions
docs-troubleshooting docs-use-cases dynamic-devices entity-category entity-device-class
entity-disabled-by-default entity-translations exception-translations icon-translations
reconfiguration-flow repair-issues stale-devices
async-dependency inject-websession strict-typing
""".split()
# hacs.json's keys (HACS's HACS_MANIFEST_JSON_SCHEMA, which refuses any other)
HACS_KEYS = {
    "content_in_root", "country", "filename", "hacs", "hide_default_branch",
    "homeassistant", "persistent_directory", "render_readme", "zip_release", "name",
}


def load(path: Path) -> Any:
    """A JSON file."""
    return json.loads(path.read_text(encoding="utf-8"))


def test_manifest() -> None:
    """hassfest's order (domain, name, then alphabetical), local polling, a version,
    and no address the repository cannot confirm."""
    manifest = load(PACKAGE / "manifest.json")
    keys = list(manifest)
    assert keys[:2] == ["domain", "name"]
    assert keys[2:] == sorted(keys[2:])
    assert manifest["domain"] == PACKAGE.name
    assert manifest["iot_class"] == "local_polling"
    assert manifest["integration_type"] == "service"
    assert manifest["config_flow"] is True
    assert re.fullmatch(r"\d+\.\d+\.\d+", manifest["version"])
    assert manifest["codeowners"] == []
    assert not {"documentation", "issue_tracker"} & set(manifest)


def test_hacs_json() -> None:
    """Only keys HACS knows, a name, and a minimum HA the code runs on."""
    hacs = load(ROOT / "hacs.json")
    assert set(hacs) <= HACS_KEYS
    assert isinstance(hacs["name"], str) and hacs["name"]
    assert re.fullmatch(r"20\d\d\.\d+\.\d+", hacs["homeassistant"])
    assert tuple(map(int, hacs["homeassistant"].split("."))) >= (2025, 4, 0)


def test_quality_scale_names_every_rule() -> None:
    """Every rule once, done / exempt / todo, and a reason beside each exempt."""
    rules = yaml.safe_load((PACKAGE / "quality_scale.yaml").read_text())["rules"]
    assert sorted(rules) == sorted(RULES)
    for name, value in rules.items():
        status = value if isinstance(value, str) else value["status"]
        assert status in ("done", "exempt", "todo"), name
        if status == "exempt":
            assert value["comment"], name


def _keys(tree: Any, prefix: str = "") -> set[str]:
    if not isinstance(tree, dict):
        return {prefix}
    return set().union(*(_keys(v, f"{prefix}/{k}") for k, v in tree.items()))


def test_translations_match_strings() -> None:
    """en.json is strings.json; zh-Hans.json has every key; every error and abort the
    flow uses is there."""
    strings = load(PACKAGE / "strings.json")
    assert load(PACKAGE / "translations" / "en.json") == strings
    assert _keys(load(PACKAGE / "translations" / "zh-Hans.json")) == _keys(strings)
    source = (PACKAGE / "config_flow.py").read_text()
    used_errors = set(re.findall(r'"(invalid_\w+|cannot_connect|unknown)"', source))
    assert used_errors - {"invalid_discovery_info"} <= set(strings["config"]["error"])
    for reason in ("already_configured", "already_in_progress", "invalid_discovery_info",
                   "reauth_successful", "reconfigure_successful"):
        assert reason in strings["config"]["abort"]
    for step in ("user", "reconfigure", "reauth_confirm", "hassio_confirm"):
        assert step in strings["config"]["step"]
    assert set(strings["exceptions"]) == {"invalid_auth", "cannot_connect"}


@pytest.mark.parametrize(
    ("name", "size"),
    [("icon.png", 256), ("icon@2x.png", 512), ("logo.png", 256), ("logo@2x.png", 512)],
)
def test_brand_images(name: str, size: int) -> None:
    """Valid PNGs (signature, chunk CRCs, pixel data) of the sizes HA and HACS use."""
    data = (PACKAGE / "brand" / name).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, idat = 8, [], b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(kind + body) == crc, kind
        chunks.append(kind)
        if kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert chunks[0] == b"IHDR" and chunks[-1] == b"IEND"
    width, height, depth, color = struct.unpack(">IIBB", data[16:26])
    assert (width, height, depth, color) == (size, size, 8, 6)
    assert len(zlib.decompress(idat)) == size * (1 + 4 * size)
