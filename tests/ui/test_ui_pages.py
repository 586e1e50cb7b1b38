"""The inspector's pages through a real server process over HTTP (issue #18).

Each page is read as a person's browser would get it; what it must show was
recorded by a real MCP client, and the infusion log's entries were made by real
/infuse calls.
"""

from __future__ import annotations

import hashlib

import pytest

from kenning_encounter.memory.models import shown_session
from kenning_encounter.store.infusion_log import session_tag
from tests.e2e.conftest import RunningServer, run_server
from tests.ui.conftest import ALICE, BOB, BOB_DIRECTOR, BOB_PROMPT, REVISION_WHY, Seeded, get


def test_the_spine_shows_encounters_with_what_they_recorded(full: RunningServer) -> None:
    reply = get(full, "/ui/")
    assert reply.status_code == 200 and reply.headers["content-type"].startswith("text/html")
    page = reply.text
    assert "kiln study" in page and "kiln cooling explains it" in page  # purpose, summary
    assert "sealed" in page and "bob kiln reading" in page
    # A session id is never shown whole, only cut short.
    assert BOB not in page and ALICE not in page
    # Newest first: Alice's encounter opened after Bob's.
    assert page.index("alice furnace") < page.index("kiln study")
    assert "script" not in reply.headers["content-security-policy"]


def test_a_node_page_shows_its_chain_and_provenance(full: RunningServer, seeded: Seeded) -> None:
    head = seeded.ids["bob kiln theory"]
    page = get(full, f"/ui/node/{head}").text
    assert "Cooling rate decides" in page
    assert REVISION_WHY in page
    assert f"/ui/node/{seeded.ids['bob kiln theory v1']}" in page  # the older version, linked
    # What the versions rest on, down to the observation and the citation.
    assert "bob kiln reading" in page and "bob kiln manual" in page
    assert "kiln study" in page  # the encounter that wrote it
    assert f"<code>{shown_session(BOB, None)}</code>" in page  # and its session, cut short
    assert f"<dt>directed by</dt><dd>{BOB_DIRECTOR}</dd>" in page  # and who directed it


def test_a_node_page_shows_world_time_and_what_links_to_it(
    full: RunningServer, seeded: Seeded
) -> None:
    page = get(full, f"/ui/node/{seeded.ids['bob kiln reading']}").text
    assert "t_observed" in page and "2024-03-02T10:00:00Z" in page
    guess = get(full, f"/ui/node/{seeded.ids['bob kiln guess']}").text
    links = guess.split('id="links-h"')[1]
    assert "bob kiln theory" in links and "INFORMS" in links


def test_search_serves_heads_and_history_on_request(full: RunningServer, seeded: Seeded) -> None:
    old = seeded.ids["bob kiln theory v1"]
    heads = get(full, "/ui/search?q=glaze+recipe").text
    assert f"/ui/node/{old}" not in heads
    history = get(full, "/ui/search?q=glaze+recipe&history=1").text
    assert f"/ui/node/{old}" in history


def test_the_infusion_log_shows_what_infuse_delivered(full: RunningServer, seeded: Seeded) -> None:
    answer = seeded.infused[BOB]
    delivered = answer["meta"]["delivered"]
    assert answer["status"] == "infused" and delivered, answer
    index = get(full, "/ui/log").text
    assert f"/ui/log/{session_tag(BOB)}" in index and BOB not in index
    page = get(full, f"/ui/log/{session_tag(BOB)}").text
    bodies = page.split("Bodies delivered")[1].split("STANDING handles")[0]
    for node_id in delivered:
        assert f"/ui/node/{node_id}" in bodies
    assert answer["meta"]["channel"] in page
    # The prompt is kept as its hash and length, never its text.
    assert BOB_PROMPT not in page
    assert f"{len(BOB_PROMPT)} characters" in page
    assert hashlib.sha256(BOB_PROMPT.encode()).hexdigest()[:16] in page


def test_pages_are_paginated_and_bad_pages_refused(full: RunningServer) -> None:
    # A page number the page cannot use is the asker's mistake: 400 (test_ui_hostile.py).
    assert get(full, "/ui/?page=999999").status_code == 400
    assert get(full, "/ui/?page=abc").status_code == 400
    # Digits of other kinds: a superscript is a digit to str.isdigit, not to int().
    for page in ("%C2%B2", "%D9%A1", "-1", "1e3", "%EF%BC%91"):
        assert get(full, f"/ui/?page={page}").status_code == 400, page
        assert get(full, f"/ui/search?q=cache&page={page}").status_code == 400, page
    assert get(full, "/ui/node/not-an-id").status_code == 404
    assert get(full, "/ui/log/zzzz").status_code == 404
    redirect = get(full, "/ui")
    assert redirect.status_code == 308 and redirect.headers["location"] == "/ui/"


def test_a_hidden_locus_never_appears(reader: RunningServer, seeded: Seeded) -> None:
    secret = [ALICE, ALICE[:8], "alice", "furnace secret", *seeded.alice_ids]
    guess = seeded.ids["bob kiln guess"]
    pages = [
        "/ui/",
        "/ui/search?q=kiln+glaze+crackle",
        "/ui/search?q=kiln+glaze+crackle&history=1",
        "/ui/search?q=furnace",
        f"/ui/node/{guess}",
        f"/ui/node/{seeded.ids['bob kiln theory']}",
        "/ui/orient",
        "/ui/log",
        f"/ui/log/{session_tag(BOB)}",
    ]
    for path in pages:
        reply = get(reader, path)
        assert reply.status_code == 200, path
        for word in secret:
            assert word not in reply.text, (path, word)
    for alice_id in seeded.alice_ids:
        assert get(reader, f"/ui/node/{alice_id}").status_code == 404
    assert get(reader, f"/ui/log/{session_tag(ALICE)}").status_code == 404
    # Bob's side is all there.
    assert "bob kiln theory" in get(reader, f"/ui/node/{guess}").text


def test_off_loopback_the_pages_need_the_token(tmp_path_factory: pytest.TempPathFactory) -> None:
    token = "ui-test-token-0123456789abcdef"
    with run_server(
        tmp_path_factory.mktemp("ui-token"),
        "--host",
        "0.0.0.0",
        env={"KENNING_ENCOUNTER_TOKEN": token},
    ) as server:
        for path in ("/ui/", "/ui/search?q=x", "/ui/log", "/ui/static/ui.css", "/ui"):
            refused = get(server, path)
            assert refused.status_code == 401, path
            assert "kiln" not in refused.text
        assert get(server, "/ui/", authorization="Bearer wrong").status_code == 401
        assert get(server, "/ui/", authorization=f"Bearer {token}").status_code == 200
        # The DNS-rebinding guard applies as well: a foreign Origin is refused.
        foreign = get(server, "/ui/", authorization=f"Bearer {token}", origin="http://evil.test")
        assert foreign.status_code == 403


def test_orient_draws_the_tools_panel(full: RunningServer, seeded: Seeded) -> None:
    page = get(full, "/ui/orient").text
    # The pictures are images with a name and a description, and no script draws them.
    assert page.count('<svg role="img" aria-labelledby=') >= 4
    assert "<script" not in page
    for heading in ("Mass against frontier mass", "Communities", "Fragility", "Frontier"):
        assert heading in page
    # The tool's readings, linked: the guess has the most mass, the theory holds it up.
    mass = page.split('id="div-h"')[1].split('id="frontier-h"')[0]
    assert mass.index(seeded.ids["bob kiln guess"]) < mass.index(seeded.ids["bob kiln theory"])
    fragility = page.split('id="frag-h"')[1].split('id="drift-h"')[0]
    assert f"/ui/node/{seeded.ids['bob kiln theory']}" in fragility and "cuts off 2" in fragility
    assert "2 communities" in page
    frontier = page.split('id="frontier-h"')[1].split('id="comm-h"')[0]
    for listed in ("Open questions", "Live hypotheses", "Ungrounded concepts"):
        assert listed in frontier
    # Drift is read against the baseline the orient tool saved while seeding; what was
    # written after it is new.
    drift = page.split('id="drift-h"')[1]
    assert "Against the baseline of" in drift
    assert f"/ui/node/{sorted(seeded.alice_ids)[0]}" in drift.split("<h3>New</h3>")[1]
    assert "superseded" not in mass  # every node the panel ranks is a chain's head
