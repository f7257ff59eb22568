"""Browser pages acting for someone else, refused by a server without a token.

A browser sends a request to any address a page names, with none of the page's own credentials needed
when the server asks for none: a page on any site the operator visits could ``POST /queues/default/pause``
or ``POST /jobs/7/cancel`` to ``127.0.0.1:8000`` (a form's POST needs no CORS preflight), and one that
re-resolves its own name to 127.0.0.1 (DNS rebinding) could read every job's payload as "same origin".
A bearer token is never sent by a browser on its own, so with one this check is not needed.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from ..cli.args import is_loopback


def browser_refusal(headers, *, loopback: bool) -> str | None:
    """Why a request to a server without a token is refused, or None. ``loopback``: the server listens on a
    loopback address, so every request for it names one in ``Host`` unless a page renamed itself to it."""
    host = _header(headers, b"host")
    origin = _header(headers, b"origin")
    if loopback and host is not None and not _is_loopback_name(_hostname(f"//{host}")):
        return (
            f"this server has no token and listens on loopback, so it answers only requests addressed to "
            f"127.0.0.1, localhost or [::1], not to {host} (a web page that renamed itself to this address "
            "would read and change jobs): address it by one of those, or start the server with --token"
        )
    if origin is None:
        return None  # not a browser's page
    name = _hostname(origin)
    same_site = host is not None and origin.split("//")[-1].lower() == host.lower()
    if (loopback and _is_loopback_name(name)) or (not loopback and same_site):
        return None
    return (
        f"a request from the web page {origin} is refused: without a token any page open in a browser could "
        "change jobs here. Send it without an Origin header (a program, not a page), or start the server with "
        "--token and send the token"
    )


def _header(headers, name: bytes) -> str | None:
    for key, value in headers:
        if key == name:
            return value.decode("latin-1")
    return None


def _hostname(url: str) -> str | None:
    try:
        return urlsplit(url).hostname
    except ValueError:
        return None


def _is_loopback_name(name: str | None) -> bool:
    return name is not None and is_loopback(name)
