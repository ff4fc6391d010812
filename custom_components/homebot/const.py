"""Constants of the homebot integration."""

from datetime import timedelta

DOMAIN = "homebot"
CONF_URL = "url"
CONF_TOKEN = "token"
# homebot's agent endpoint: one turn (docs/home-assistant.md)
AGENT_PATH = "/api/ha/conversation"
# homebot's name and version: the check of the config flow, the setup and the poll
INFO_PATH = "/api/ha/info"
# homebot sends a frame well within this while it answers (a "waiting" frame every 4 s
# when it has nothing to say yet); silence longer means homebot hung, and ends the turn
SILENCE_SECONDS = 10
# the longest frame line taken from homebot
MAX_LINE_BYTES = 64 * 1024
# how often the entity asks homebot whether it is up
CHECK_INTERVAL = timedelta(seconds=60)
# the chat-log entries forwarded with a turn: at most this many, each cut to this length
CHAT_LOG_MAX_ENTRIES = 8
CHAT_LOG_MAX_CHARS = 1000
