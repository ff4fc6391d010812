"""The config flow: homebot's URL and its agent token, typed in (user), changed
(reconfigure, reauth) or offered by the Supervisor when homebot runs as an add-on
(hassio). Every step checks both with GET /api/ha/info before it stores anything; a
wrong token is `invalid_auth`, a refused certificate `invalid_certificate`, an
unreachable URL `cannot_connect`, and anything else `unknown` (logged)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import voluptuous as vol

from homeassistant.config_entries import ConfigFlow, ConfigFlowResult
from homeassistant.helpers.aiohttp_client import async_get_clientsession
from homeassistant.helpers.selector import (
    TextSelector,
    TextSelectorConfig,
    TextSelectorType,
)
from homeassistant.helpers.service_info.hassio import HassioServiceInfo

from .client import HomebotClient, HomebotError, HomebotInfo, InvalidAuth, InvalidCertificate
from .const import CONF_TOKEN, CONF_URL, DOMAIN
from .url import entry_title, normalize_url

_LOGGER = logging.getLogger(__name__)

URL_SELECTOR = TextSelector(TextSelectorConfig(type=TextSelectorType.URL))
TOKEN_SELECTOR = TextSelector(TextSelectorConfig(type=TextSelectorType.PASSWORD))


def _url_token_schema(url: str | None = None) -> vol.Schema:
    url_key = vol.Required(CONF_URL) if url is None else vol.Required(CONF_URL, default=url)
    return vol.Schema({url_key: URL_SELECTOR, vol.Required(CONF_TOKEN): TOKEN_SELECTOR})


REAUTH_SCHEMA = vol.Schema({vol.Required(CONF_TOKEN): TOKEN_SELECTOR})


class HomebotConfigFlow(ConfigFlow, domain=DOMAIN):
    """Add a homebot."""

    VERSION = 1

    def __init__(self) -> None:
        """A flow with no discovery yet."""
        self._discovered: dict[str, str] = {}
        self._addon = ""

    async def _check(self, url: str, token: str) -> tuple[HomebotInfo | None, str | None]:
        """homebot's info, or the error key telling why not."""
        client = HomebotClient(async_get_clientsession(self.hass), url, token)
        try:
            return await client.async_info(), None
        except InvalidAuth:
            _LOGGER.info("homebot at %s refused the token", url)
            return None, "invalid_auth"
        except InvalidCertificate as err:
            _LOGGER.warning("homebot's certificate at %s was refused: %s", url, err)
            return None, "invalid_certificate"
        except HomebotError as err:
            _LOGGER.info("homebot cannot be reached at %s: %s", url, err)
            return None, "cannot_connect"
        except Exception:
            _LOGGER.exception("Unexpected error while checking homebot at %s", url)
            return None, "unknown"

    async def _url_and_token(
        self, user_input: dict[str, Any], errors: dict[str, str]
    ) -> tuple[str, HomebotInfo] | None:
        """The normalized URL and homebot's info when both check out."""
        url = normalize_url(user_input[CONF_URL])
        if url is None:
            errors[CONF_URL] = "invalid_url"
            return None
        info, error = await self._check(url, user_input[CONF_TOKEN])
        if error:
            errors["base"] = error
            return None
        assert info is not None
        return url, info

    async def async_step_user(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """homebot's URL and token, typed in."""
        errors: dict[str, str] = {}
        if user_input is not None:
            if (url := normalize_url(user_input[CONF_URL])) is not None:
                self._async_abort_entries_match({CONF_URL: url})
            if checked := await self._url_and_token(user_input, errors):
                url, info = checked
                return self.async_create_entry(
                    title=entry_title(url, info),
                    data={CONF_URL: url, CONF_TOKEN: user_input[CONF_TOKEN]},
                )
        return self.async_show_form(
            step_id="user",
            data_schema=self.add_suggested_values_to_schema(
                _url_token_schema(), user_input
            ),
            errors=errors,
        )

    async def async_step_reconfigure(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """A new URL or token for a homebot already added."""
        entry = self._get_reconfigure_entry()
        errors: dict[str, str] = {}
        if user_input is not None:
            url = normalize_url(user_input[CONF_URL])
            if url is not None and url != entry.data[CONF_URL]:
                self._async_abort_entries_match({CONF_URL: url})
            if checked := await self._url_and_token(user_input, errors):
                url, info = checked
                return self.async_update_reload_and_abort(
                    entry,
                    title=entry_title(url, info),
                    data_updates={CONF_URL: url, CONF_TOKEN: user_input[CONF_TOKEN]},
                )
        return self.async_show_form(
            step_id="reconfigure",
            data_schema=_url_token_schema(entry.data[CONF_URL]),
            errors=errors,
            description_placeholders={"name": entry.title, "url": entry.data[CONF_URL]},
        )

    async def async_step_reauth(
        self, entry_data: Mapping[str, Any]
    ) -> ConfigFlowResult:
        """homebot refused the token: ask for the new one."""
        return await self.async_step_reauth_confirm()

    async def async_step_reauth_confirm(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """The new token of the homebot named in the form."""
        entry = self._get_reauth_entry()
        errors: dict[str, str] = {}
        if user_input is not None:
            _info, error = await self._check(entry.data[CONF_URL], user_input[CONF_TOKEN])
            if error:
                errors["base"] = error
            else:
                return self.async_update_reload_and_abort(
                    entry, data_updates={CONF_TOKEN: user_input[CONF_TOKEN]}
                )
        return self.async_show_form(
            step_id="reauth_confirm",
            data_schema=REAUTH_SCHEMA,
            errors=errors,
            description_placeholders={"name": entry.title, "url": entry.data[CONF_URL]},
        )

    async def async_step_hassio(
        self, discovery_info: HassioServiceInfo
    ) -> ConfigFlowResult:
        """homebot's add-on announced itself through the Supervisor."""
        url = normalize_url(str(discovery_info.config.get(CONF_URL) or ""))
        token = discovery_info.config.get(CONF_TOKEN)
        if url is None or not isinstance(token, str) or not token:
            return self.async_abort(reason="invalid_discovery_info")
        for entry in self._async_current_entries(include_ignore=False):
            if entry.data.get(CONF_URL) == url:
                # the add-on's token changed: the entry follows it
                return self.async_update_reload_and_abort(
                    entry,
                    data_updates={CONF_TOKEN: token},
                    reason="already_configured",
                    reload_even_if_entry_is_unchanged=False,
                )
        await self.async_set_unique_id(f"hassio:{discovery_info.slug}")
        self._abort_if_unique_id_configured()
        self._discovered = {CONF_URL: url, CONF_TOKEN: token}
        self._addon = discovery_info.name
        self.context["title_placeholders"] = {"name": discovery_info.name}
        return await self.async_step_hassio_confirm()

    async def async_step_hassio_confirm(
        self, user_input: dict[str, Any] | None = None
    ) -> ConfigFlowResult:
        """One click to add the add-on's homebot."""
        errors: dict[str, str] = {}
        if user_input is not None:
            url = self._discovered[CONF_URL]
            info, error = await self._check(url, self._discovered[CONF_TOKEN])
            if error:
                errors["base"] = error
            else:
                assert info is not None
                return self.async_create_entry(
                    title=entry_title(url, info), data=dict(self._discovered)
                )
        return self.async_show_form(
            step_id="hassio_confirm",
            errors=errors,
            description_placeholders={"addon": self._addon},
        )
