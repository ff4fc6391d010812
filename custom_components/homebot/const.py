"""Constants of the homebot integration."""

DOMAIN = "homebot"
CONF_URL = "url"
CONF_TOKEN = "token"
# homebot's agent endpoint (docs/home-assistant.md)
AGENT_PATH = "/api/ha/conversation"
# homebot sends a frame well within this while it answers (a "waiting" frame every 4 s
# when it has nothing to say yet); silence longer means homebot hung, and ends the turn
SILENCE_SECONDS = 10
# the longest frame line taken from homebot
MAX_LINE_BYTES = 64 * 1024
