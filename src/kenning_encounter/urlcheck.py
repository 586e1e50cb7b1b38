"""What makes an endpoint URL one we will write down or call: checked once, for every
setting and flag that takes one (install's --url, the matcher's base URL, NEO4J_URI).

urlsplit is lenient on purpose: it drops tabs and line breaks, takes a port it cannot
read until asked, and keeps credentials in the host part. A URL that goes into a
settings file, a hook's command line or every request to a model must be what it looks
like, so each of those is a refusal here, said in words that name the fix.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

HTTP: tuple[str, ...] = ("http", "https")
BOLT: tuple[str, ...] = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")


def url_problem(url: str, *, secret_from: str, schemes: tuple[str, ...] = HTTP) -> str | None:
    """Why ``url`` is not an endpoint we may use (one of ``schemes``), or None.
    ``secret_from`` names where a credential belongs instead (an environment variable)."""
    if any(c.isspace() or not c.isprintable() for c in url):
        return "it holds white space or a control character"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - reading it checks it (a ValueError past 65535)
    except ValueError as exc:
        return f"it does not parse ({exc})"
    if parts.scheme not in schemes or not parts.hostname:
        kinds = "an http(s) URL" if schemes == HTTP else f"a {'/'.join(schemes)} URL"
        return f"it is not {kinds} with a host"
    if parts.username is not None or parts.password is not None:
        return f"it carries credentials; drop them and export {secret_from} instead"
    return None


def shown(url: str) -> str:
    """``url`` quoted for a message: credentials masked (a password is a secret, and
    messages reach logs), cut when long."""
    url = re.sub(r"(?<=://)[^/?#]*@", "***@", url, count=1)
    return repr(url) if len(url) <= 120 else f"{url[:100]!r}… ({len(url)} characters)"
