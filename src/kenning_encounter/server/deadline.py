"""A deadline on receiving a request, for uvicorn's HTTP/1.1 protocol.

uvicorn closes a connection left idle after a response, but not one that never sends
a request, nor one that sends its head a byte at a time: each such connection held a
socket and its state for as long as the client liked, and enough of them (any local
process can open thousands) left none for the hook's ``/infuse`` or the agent's
client. Here a connection waiting for a request's head has ``timeout`` seconds to
send all of it, and one sending a body may pause ``timeout`` seconds at most between
its pieces; past either, the connection is closed. A request received whole is
answered however long the answer takes (a read has ``read_timeout`` of its own, and
a server-sent event stream is held open on purpose).
"""

from __future__ import annotations

import asyncio
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol


class _Deadlined(H11Protocol):
    timeout: float = 10.0
    _waiting: asyncio.TimerHandle | None = None
    _head: bool = False  # the deadline is on a head (absolute), not a body's next piece

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._watch()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch(progressed=True)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_watching()
        super().connection_lost(exc)

    def _watch(self, *, progressed: bool = False) -> None:
        """Arm, move or drop the deadline for the state the client's side is in now."""
        state: Any = self.conn.their_state
        if self.transport.is_closing() or state not in (h11.IDLE, h11.SEND_BODY):
            self._stop_watching()  # a request received whole, or the connection ending
            return
        head = state is h11.IDLE
        if self._waiting is not None and ((head and self._head) or not progressed):
            return  # a head's deadline holds however its bytes come
        self._stop_watching()
        self._head = head
        self._waiting = self.loop.call_later(self.timeout, self._too_slow)

    def _stop_watching(self) -> None:
        if self._waiting is not None:
            self._waiting.cancel()
            self._waiting = None

    def _too_slow(self) -> None:
        self._waiting = None
        if not self.transport.is_closing():
            self.transport.close()


def deadlined(timeout: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol, closing a connection that takes longer than ``timeout``
    seconds to send a request's head, or pauses longer within its body."""
    return type("DeadlinedH11", (_Deadlined,), {"timeout": timeout})
