"""``kenning-encounter ui``: open the inspector in a browser, starting a server only if none answers.

A server already listening at the configured address is asked ``/healthz`` (open
to anyone, it says only "ok" and the version); when it answers, its /ui/ is opened
and nothing else starts, so the memory is never opened twice. When nothing answers,
this process serves the memory as ``serve`` would and opens the page once it listens.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import urllib.error
import urllib.request
import webbrowser
from collections.abc import Callable
from typing import Final

from kenning_encounter.config import Settings
from kenning_encounter.ui import access

WILDCARD: Final = frozenset({"0.0.0.0", "::", ""})
PROBE_TIMEOUT_S: Final = 1.0
WAIT_FOR_SERVER_S: Final = 60.0


def base_url(settings: Settings) -> str:
    host = "127.0.0.1" if settings.host in WILDCARD else settings.host
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{settings.port}"


def answering(base: str, timeout_s: float = PROBE_TIMEOUT_S) -> bool:
    """Whether a kenning-encounter server answers at ``base``."""
    try:
        with urllib.request.urlopen(f"{base}/healthz", timeout=timeout_s) as reply:
            body = json.loads(reply.read(4_096) or b"{}")
    # Whatever answers on that port may not be ours: 4 KiB nests past the parser's depth.
    except (OSError, ValueError, RecursionError, urllib.error.URLError):
        return False
    return isinstance(body, dict) and body.get("status") == "ok"


def address_to_open(settings: Settings, base: str) -> str:
    """/ui/, or with a token the one-time sign-in that sets the browser's cookie and
    redirects there: the token itself never goes into a URL (ui/access.py)."""
    if settings.token is None:
        return f"{base}/ui/"
    code = access.login_code(settings.token.get_secret_value())
    return f"{base}{access.LOGIN_PATH}?code={code}"


def open_when_up(
    settings: Settings, base: str, opener: Callable[[str], object]
) -> threading.Thread:
    def wait() -> None:
        deadline = time.monotonic() + WAIT_FOR_SERVER_S
        while time.monotonic() < deadline:
            if answering(base):
                opener(address_to_open(settings, base))  # minted now: its minute starts here
                return
            time.sleep(0.2)

    thread = threading.Thread(target=wait, name="open-inspector", daemon=True)
    thread.start()
    return thread


def run_ui(
    settings: Settings,
    serve: Callable[[], int],
    opener: Callable[[str], object] = webbrowser.open,
) -> int:
    """Open the inspector; serve first (``serve``) when no server answers."""
    base = base_url(settings)
    url = f"{base}/ui/"
    if settings.port != 0 and answering(base):
        sys.stdout.write(f"the inspector of the server already running: {url}\n")
        sys.stdout.flush()
        opener(address_to_open(settings, base))
        return 0
    if settings.port == 0:
        sys.stderr.write("kenning-encounter ui: give --port (0 picks a port nobody can guess)\n")
        return 2
    sys.stdout.write(f"no server answered at {base}; serving here. The inspector: {url}\n")
    sys.stdout.flush()
    open_when_up(settings, base, opener)
    return serve()
