"""The config flow: homebot's URL and its agent token; re-authentication when the token
changes. A wrong token is `invalid_auth`, an unreachable URL `cannot_connect`, and no
entry is made either way."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import voluptuous as vol

from homeassistant.config_entries import ConfigFlow, ConfigFlowResult
from homeassistant.helpers.aiohttp_client import async_get_clientsession

from .client import HomebotClient, HomebotError, InvalidAuth
from .const import CONF_TOKEN, CONF_URL, DOMAIN

USER_SCHEMA = vol.Schema({vol.Required(CONF_URL): str, vol.Required(CONF_TOKEN): str})
REAUTH_SCHEMA = vol.Schema({vol.Required(CONF_TOKEN): str})


class HomebotConfigFlow(ConfigFlow, domain=DOMAIN):
    """Add a homebot."""

    VERSION = 1

    async def _check(self, url: str, token: str) -> str | None:
        client = HomebotClient(async_get_clientsession(self.hass), url, token)
        try:
            await client.async_check()
        except InvalidAuth:
            return "invalid_auth"
        except HomebotError:
            return "cannot_connect"
        return None

    async def async_step_user(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        errors: dict[str, str] = {}
        if user_input is not None:
            url = user_input[CONF_URL].strip().rstrip("/")
            if not url.startswith(("http://", "https://")):
                errors[CONF_URL] = "invalid_url"
            else:
                self._async_abort_entries_match({CONF_URL: url})
                if error := await self._check(url, user_input[CONF_TOKEN]):
                    errors["base"] = error
                else:
                    return self.async_create_entry(
                        title="homebot",
                        data={CONF_URL: url, CONF_TOKEN: user_input[CONF_TOKEN]},
                    )
        return self.async_show_form(
            step_id="user", data_schema=USER_SCHEMA, errors=errors
        )

    async def async_step_reauth(
        self, entry_data: Mapping[str, Any]
    ) -> ConfigFlowResult:
        return await self.async_step_reauth_confirm()

    async def async_step_reauth_confirm(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        errors: dict[str, str] = {}
        entry = self._get_reauth_entry()
        if user_input is not None:
            if error := await self._check(entry.data[CONF_URL], user_input[CONF_TOKEN]):
                errors["base"] = error
            else:
                return self.async_update_reload_and_abort(
                    entry, data_updates={CONF_TOKEN: user_input[CONF_TOKEN]}
                )
        return self.async_show_form(
            step_id="reauth_confirm", data_schema=REAUTH_SCHEMA, errors=errors
        )
