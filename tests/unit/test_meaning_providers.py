"""Both providers, through their real clients, against fake servers on 127.0.0.1."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from kenning_encounter.errors import ConfigError, MatcherError
from kenning_encounter.meaning.providers import make_provider
from kenning_encounter.meaning.providers.base import ModelRequest, Provider
from kenning_encounter.meaning.providers.gemini import MISSING_PACKAGE, GeminiProvider
from kenning_encounter.meaning.providers.openai_compat import OpenAICompatProvider
from tests.support.fake_llm import FakeGemini, FakeOpenAI, Reply

REQUEST = ModelRequest(system="be brief", user="say something", purpose="select", json_output=True)


@pytest.fixture(params=["gemini", "openai"])
def served(request: pytest.FixtureRequest) -> Iterator[tuple[Provider, FakeGemini | FakeOpenAI]]:
    if request.param == "gemini":
        fake: FakeGemini | FakeOpenAI = FakeGemini().start()
        provider: Provider = GeminiProvider(
            api_key="test-key", base_url=fake.url, timeout_s=0.8, backoff_s=0.01
        )
    else:
        fake = FakeOpenAI().start()
        provider = OpenAICompatProvider(
            base_url=fake.url + "/v1",
            model="local-model",
            api_key="k",
            timeout_s=0.8,
            backoff_s=0.01,
        )
    provider.warm_up()  # the one-time import and client setup stays out of the timings
    yield provider, fake
    provider.close()
    fake.stop()


def test_reply_text_and_request_on_the_wire(
    served: tuple[Provider, FakeGemini | FakeOpenAI],
) -> None:
    provider, fake = served
    fake.script('{"ids": [1]}')
    reply = provider.complete(REQUEST)
    assert reply.text == '{"ids": [1]}'
    assert (reply.provider, reply.model, reply.attempts) == (provider.name, provider.model, 1)
    seen = fake.requests[0]
    assert (seen.system, seen.user) == ("be brief", "say something")
    if isinstance(fake, FakeGemini):
        assert seen.path == "/v1beta/models/gemini-3.5-flash-lite:generateContent"
        assert seen.headers["x-goog-api-key"] == "test-key"
        assert seen.body["generationConfig"]["responseMimeType"] == "application/json"
        assert seen.body["generationConfig"]["temperature"] == 0
    else:
        assert seen.body["model"] == "local-model"
        assert seen.headers["authorization"] == "Bearer k"
        assert seen.body["response_format"] == {"type": "json_object"}


def test_transient_errors_are_retried(served: tuple[Provider, FakeGemini | FakeOpenAI]) -> None:
    provider, fake = served
    fake.script(Reply(status=500), Reply(status=429), "fine")
    reply = provider.complete(REQUEST)
    assert reply.text == "fine" and reply.attempts == 3 and fake.hits == 3


def test_persistent_500_gives_http_error_after_retries(
    served: tuple[Provider, FakeGemini | FakeOpenAI],
) -> None:
    provider, fake = served
    fake.script(*[Reply(status=500)] * 5)
    with pytest.raises(MatcherError) as caught:
        provider.complete(REQUEST)
    assert caught.value.reason == "http_error" and "500" in caught.value.detail
    assert fake.hits == 3  # the default max_attempts


def test_client_error_is_not_retried(served: tuple[Provider, FakeGemini | FakeOpenAI]) -> None:
    provider, fake = served
    fake.script(Reply(status=400), "never reached")
    with pytest.raises(MatcherError) as caught:
        provider.complete(REQUEST)
    assert caught.value.reason == "http_error" and fake.hits == 1


def test_slow_server_times_out_on_time(served: tuple[Provider, FakeGemini | FakeOpenAI]) -> None:
    provider, fake = served
    fake.script(Reply(text="too late", delay_s=5))
    # The answer exists only after 5 s; a timeout is the deadline's effect (wall time is bench's).
    with pytest.raises(MatcherError) as caught:
        provider.complete(REQUEST)
    assert caught.value.reason == "timeout"


def test_retries_never_outlast_the_timeout(
    served: tuple[Provider, FakeGemini | FakeOpenAI],
) -> None:
    provider, fake = served
    # The retry's answer comes 0.6 s after it is asked: past the call's 0.4 s budget but
    # within the provider's own 0.8 s, so a retry given a fresh full timeout would get it.
    fake.script(Reply(status=503), Reply(text="too late", delay_s=0.6))
    with pytest.raises(MatcherError) as caught:
        provider.complete(REQUEST, timeout_s=0.4)
    assert caught.value.reason == "timeout"
    assert fake.hits == 2


def test_a_transient_failure_that_leaves_no_time_to_retry_is_a_timeout(
    served: tuple[Provider, FakeGemini | FakeOpenAI],
) -> None:
    provider, fake = served
    # The 503 itself comes as the budget runs out: no attempt is left time, whatever the
    # machine's load, so the call did not finish within its budget.
    fake.script(Reply(status=503, delay_s=0.39), Reply(text="never asked"))
    with pytest.raises(MatcherError) as caught:
        provider.complete(REQUEST, timeout_s=0.4)
    assert caught.value.reason == "timeout"
    assert fake.hits == 1


def test_unreadable_wire_response_is_malformed_output(
    served: tuple[Provider, FakeGemini | FakeOpenAI],
) -> None:
    provider, fake = served
    fake.script(Reply(raw=b'{"unexpected": true}'))
    with pytest.raises(MatcherError) as caught:
        provider.complete(REQUEST)
    assert caught.value.reason == "malformed_output"


def test_gemini_without_key_never_calls_out() -> None:
    with FakeGemini() as fake:
        provider = GeminiProvider(api_key=None, base_url=fake.url)
        with pytest.raises(MatcherError) as caught:
            provider.complete(REQUEST)
        assert caught.value.reason == "no_key" and "GEMINI_API_KEY" in str(caught.value)
        assert fake.hits == 0


def test_gemini_without_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    # A None entry makes the import fail as it does when the package is absent.
    monkeypatch.setitem(sys.modules, "google.genai", None)
    provider = GeminiProvider(api_key="k")
    with pytest.raises(MatcherError) as caught:
        provider.check()
    assert caught.value.reason == "provider_missing"
    assert caught.value.detail == MISSING_PACKAGE
    assert "pip install 'kenning-encounter[gemini]'" in str(caught.value)


def test_openai_json_mode_can_be_left_out() -> None:
    with FakeOpenAI() as fake:
        provider = OpenAICompatProvider(base_url=fake.url + "/v1", model="m", json_mode=False)
        provider.complete(REQUEST)
        provider.close()
        assert "response_format" not in fake.requests[0].body
        assert "authorization" not in fake.requests[0].headers


def test_unreachable_endpoint_is_http_error() -> None:
    with FakeOpenAI() as fake:
        url = fake.url
    provider = OpenAICompatProvider(base_url=url + "/v1", model="m", timeout_s=1, backoff_s=0.01)
    with pytest.raises(MatcherError) as caught:
        provider.complete(REQUEST)
    provider.close()
    assert caught.value.reason == "http_error"


def test_make_provider_names_what_is_missing() -> None:
    assert make_provider("gemini", api_key="k").model == "gemini-3.5-flash-lite"
    assert make_provider("openai", model="m", base_url="http://127.0.0.1:1/v1").name == "openai"
    with pytest.raises(ConfigError, match="base URL"):
        make_provider("openai", model="m")
    with pytest.raises(ConfigError, match="model name"):
        make_provider("openai", base_url="http://127.0.0.1:1/v1")
    with pytest.raises(ConfigError, match="unknown matcher provider"):
        make_provider("claude", api_key="k")  # type: ignore[arg-type]
