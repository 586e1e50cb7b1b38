"""Neo4j stops answering under a running store: every call is answered in seconds, in
plain words, and the store uses the server again, unrestarted, once it answers.

The outage is made by a TCP relay between the store and the test server: frozen, it
takes connections and bytes and answers nothing (a hung JVM, a stopped process:
what SIGSTOP does to the server, without stopping one the other tests share);
refusing, it closes its port (a stopped or crashed server). ``test_neo4j_outage_server``
does the same to a real server process of its own.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

import pytest

from kenning_encounter.errors import NotFound, StoreUnavailable
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.neo4j import Neo4jStore
from kenning_encounter.store.neo4j.outage import socket_of
from tests.support.backends import neo4j_target

pytestmark = pytest.mark.neo4j

# Bolt's COMMIT message, as the driver chunks it: size 2, a struct of no fields, 0x12.
COMMIT = b"\x00\x02\xb0\x12\x00\x00"
# What "in seconds" means here: the watch's stall and probe (outage.py) and a margin.
PROMPT_S = 8.0


class Relay:
    """A TCP relay to ``upstream`` on a port of its own that can freeze or refuse."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self._upstream = upstream
        self._flowing = threading.Event()
        self._flowing.set()
        self._lock = threading.Lock()
        self._conns: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self._closed = False
        # When set, a COMMIT from the client freezes the replies (``forward_commit``
        # says whether the server gets the COMMIT itself first).
        self.freeze_on_commit: bool | None = None
        self.commit_seen = threading.Event()
        self.port = self._listen(0)

    @property
    def uri(self) -> str:
        return f"bolt://127.0.0.1:{self.port}"

    def _listen(self, port: int) -> int:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()
        return int(listener.getsockname()[1])

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                server = socket.create_connection(self._upstream)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._conns += [client, server]
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, outbound: bool) -> None:
        with contextlib.suppress(OSError):
            while True:
                data = src.recv(65536)
                if not data:
                    break
                commit = outbound and self.freeze_on_commit is not None and COMMIT in data
                if commit:
                    self._flowing.clear()  # the replies stop here
                    self.commit_seen.set()
                    if not self.freeze_on_commit:
                        continue  # the server never hears of it
                    dst.sendall(data)
                    continue
                self._flowing.wait()
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def freeze(self) -> None:
        self._flowing.clear()

    def thaw(self) -> None:
        self.freeze_on_commit = None
        self._flowing.set()

    def refuse(self) -> None:
        """Close the port and reset every connection: a server that is gone."""
        assert self._listener is not None
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accept: the port closes
        self._listener.close()
        with self._lock:
            conns, self._conns = self._conns, []
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")
                conn.close()

    def reopen(self) -> None:
        self._listen(self.port)

    def close(self) -> None:
        self.thaw()
        self.refuse()


@contextlib.contextmanager
def relay_to_test_server() -> Generator[Relay]:
    host, port = neo4j_target().uri.split("://", 1)[1].rsplit(":", 1)
    relayed = Relay((host, int(port)))
    try:
        yield relayed
    finally:
        relayed.close()


@pytest.fixture
def relay(neo4j_store: Neo4jStore) -> Iterator[Relay]:
    """A relay to the (emptied) test server."""
    with relay_to_test_server() as relayed:
        yield relayed


@pytest.fixture
def store(relay: Relay) -> Iterator[Neo4jStore]:
    """A store whose every connection goes through the relay."""
    t = neo4j_target()
    opened = Neo4jStore.open(relay.uri, t.username, t.password, t.database)
    try:
        yield opened
    finally:
        opened.close()


def answered(call: Callable[[], Any], limit: float = 60.0) -> tuple[float, BaseException | Any]:
    """How long ``call`` took to answer, and its answer (an error too); a call that has not
    answered after ``limit`` fails the test rather than hanging it."""
    done: list[Any] = []

    def run() -> None:
        try:
            done.append(call())
        except BaseException as exc:
            done.append(exc)

    started = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(limit)
    assert done, f"no answer after {limit:g} s"
    return time.monotonic() - started, done[0]


def note(name: str) -> list[dict[str, Any]]:
    return [{"type": "Note", "name": name, "description": "written across an outage"}]


def assert_not_answering(answer: Any, relay: Relay, *, write: bool) -> str:
    assert isinstance(answer, StoreUnavailable), answer
    text = str(answer)
    assert f"Neo4j at {relay.uri} is not answering" in text, text
    assert ("Nothing of this write was applied" in text) == write, text
    assert neo4j_target().password not in text
    return text


def test_a_hung_server_is_answered_in_seconds_and_used_again_unrestarted(
    store: Neo4jStore, relay: Relay
) -> None:
    memory = Memory(store)
    memory.advance_encounter("s", "outage")
    memory.create_entities("s", note("before"))
    gds = store.analytics_executor()
    assert gds is not None
    relay.freeze()
    try:
        took, answer = answered(lambda: memory.create_entities("s", note("during")))
        assert took < PROMPT_S, f"a write waited {took:.1f} s on a hung server"
        assert_not_answering(answer, relay, write=True)
        for call in (
            lambda: memory.find_by_name("before"),
            lambda: store.fulltext("before"),
            lambda: store.ledgers.load("s"),
            lambda: gds.run("RETURN gds.version() AS v", doing="reading the GDS version"),
            lambda: store.read_cypher(
                "MATCH (n:Note) RETURN n.name", row_cap=10, char_cap=10_000, timeout_s=30.0
            ),
        ):
            took, answer = answered(call)
            assert took < PROMPT_S, f"a read waited {took:.1f} s on a hung server"
            assert_not_answering(answer, relay, write=False)
    finally:
        relay.thaw()
    # No restart: the same store writes and reads again, and the refused write is absent.
    took, _ = answered(lambda: memory.create_entities("s", note("after")))
    assert took < PROMPT_S
    assert memory.find_by_name("after").node.name == "after"
    with pytest.raises(NotFound):
        memory.find_by_name("during")
    assert gds.run("RETURN gds.version() AS v", doing="reading the GDS version")


def test_read_cypher_on_a_hung_server_is_cut_too(store: Neo4jStore, relay: Relay) -> None:
    """Its explicit transaction is watched as a unit is: the first call to meet the hang
    is answered in seconds, and says why."""
    relay.freeze()
    try:
        took, answer = answered(
            lambda: store.read_cypher("RETURN 1", row_cap=10, char_cap=10_000, timeout_s=60.0)
        )
    finally:
        relay.thaw()
    assert took < PROMPT_S, f"read_cypher waited {took:.1f} s on a hung server"
    assert "no answer within" in assert_not_answering(answer, relay, write=False)
    assert store.read_cypher("RETURN 1", row_cap=10, char_cap=10_000, timeout_s=5.0).rows == [[1]]


def test_a_stopped_server_is_answered_in_seconds_and_used_again_when_back(
    store: Neo4jStore, relay: Relay
) -> None:
    memory = Memory(store)
    memory.advance_encounter("s", "outage")
    relay.refuse()
    try:
        for write, call in (
            (True, lambda: memory.create_entities("s", note("during"))),
            (False, lambda: memory.find_by_name("during")),
            (False, lambda: store.fulltext("during")),
        ):
            took, answer = answered(call)
            assert took < PROMPT_S, f"a call waited {took:.1f} s on a stopped server"
            assert "connection refused" in assert_not_answering(answer, relay, write=write)
    finally:
        relay.reopen()
    memory.create_entities("s", note("after"))
    assert memory.find_by_name("after").node.name == "after"


@pytest.mark.parametrize("server_commits", [True, False], ids=["committed", "never-committed"])
def test_a_write_lost_while_committing_is_told_it_may_or_may_not_be_applied(
    store: Neo4jStore, relay: Relay, server_commits: bool
) -> None:
    """Whichever it was, the caller hears the one thing that is true (it may or may not),
    and the write is then wholly there or wholly absent."""
    memory = Memory(store)
    memory.advance_encounter("s", "outage")
    relay.freeze_on_commit = server_commits
    try:
        took, answer = answered(
            lambda: memory.create_entities("s", note("in flight") + note("its twin"))
        )
    finally:
        relay.thaw()
    assert relay.commit_seen.is_set()
    assert took < PROMPT_S, f"a write waited {took:.1f} s for its commit's answer"
    assert isinstance(answer, StoreUnavailable), answer
    assert "may or may not have been applied" in str(answer), answer
    found = []
    for name in ("in flight", "its twin"):
        with contextlib.suppress(NotFound):
            found.append(memory.find_by_name(name).node.name)
    assert found == (["in flight", "its twin"] if server_commits else [])
    memory.create_entities("s", note("after"))  # and the store goes on, unrestarted


def test_the_watch_reaches_the_socket_under_a_driver_session(relay: Relay) -> None:
    """The one place outage.py reaches into the driver: a driver that moves it fails here,
    not by a hang in an outage."""
    import neo4j

    t = neo4j_target()
    peers: list[int | None] = []

    def look(tx: Any) -> None:
        for holder in (session, tx):
            raw = socket_of(holder)
            peers.append(None if raw is None else raw.getpeername()[1])

    with (
        neo4j.GraphDatabase.driver(relay.uri, auth=t.auth) as driver,
        driver.session(database=t.database) as session,
    ):
        session.execute_read(look)
    assert peers == [relay.port, relay.port]
