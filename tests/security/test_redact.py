"""apiflow/redact.py and where it is applied: what counts as a secret, every form it is removed in,
what is deliberately left alone (a world's mock tokens in the transcript)."""

from __future__ import annotations

import asyncio
import base64
import logging
from urllib.parse import quote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from secretscan import needles

from apiflow.agent import TrialSpec
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.models import make_model
from apiflow.models.base import GenerateConfig
from apiflow.redact import REDACTED, is_secret_name, redact, secret_values, secrets_in
from apiflow.runner import play_trial_sync

KEY = "sk-proj-UNITfakeKEY0123456789abcdef"
PLAIN = "UNITplainSECRETvalue-97531"  # not credential-shaped: only its env name makes it secret


@pytest.fixture
def keyed_env(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("MY_SERVICE_TOKEN", PLAIN)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "foo")  # moto's dummy: too short to be a credential


@pytest.mark.parametrize(
    ("name", "secret"),
    [("OPENAI_API_KEY", True), ("ANTHROPIC_API_KEY", True), ("HF_TOKEN", True), ("AWS_SECRET_ACCESS_KEY", True),
     ("AWS_SESSION_TOKEN", True), ("DB_PASSWORD", True), ("MY_APIKEY", True), ("api_key", True),
     ("Authorization", True), ("x-api-key", True), ("PATH", False), ("HOME", False), ("PWD", False),
     ("SSH_AUTH_SOCK", False), ("GOOGLE_KEY_FILE", False), ("api_base", False), ("timeout", False),
     ("LITELLM_LOCAL_MODEL_COST_MAP", False)],
)  # fmt: skip
def test_what_names_a_credential(name, secret):
    assert is_secret_name(name) is secret


def test_env_values_are_removed_in_every_encoding_and_alignment(keyed_env):
    assert secret_values() == {KEY, PLAIN}
    for value in (KEY, PLAIN):
        texts = [f"error: {value}.", quote(value, safe=""), f"id={value}&x=1"]
        texts += [base64.b64encode(prefix + value.encode() + b"!").decode() for prefix in (b"", b"u", b"us", b"usr:")]
        texts += [base64.urlsafe_b64encode(b"?" + value.encode()).decode()]
        for text in texts:
            cleaned = redact(text)
            assert REDACTED in cleaned
            assert not any(n in cleaned.encode() for n in needles(value).values()), (text, cleaned)


def test_credential_shapes_are_removed_even_when_never_seen():
    text = (
        "headers={'Authorization': 'Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig', 'x-api-key': 'abcdEFGH1234'} "
        'body {"api-key": "zzzz-9999-yyyy"} curl -H "authorization: Basic dXNlcjpwYXNzd29yZA==" '
        "key sk-ant-api03-abcdefghijklmnop AKIAIOSFODNN7EXAMPLE https://h/v1?key=AIzaSyDummy123&alt=json"
    )
    cleaned = redact(text)
    for secret in ("eyJhbGci", "abcdEFGH1234", "zzzz-9999", "dXNlcjpwYXNz", "sk-ant-api03", "AKIAIOSFODNN7", "AIzaSy"):
        assert secret not in cleaned, (secret, cleaned)
    assert "Authorization" in cleaned and "alt=json" in cleaned  # names and neighbours stay readable


def test_short_values_and_ordinary_text_are_left_alone(keyed_env):
    text = "InternalServerError: foo bar (status 500) tokens=1200 retry in 3 s"
    assert redact(text) == text


def test_params_secrets_are_found_at_any_depth():
    params = {"api_base": "http://127.0.0.1:1/v1", "api_key": "grid-key-123456789", "timeout": 5,
              "extra_headers": {"Authorization": "Bearer hdr-token-abcdefgh", "X-Trace": "trace-id-0000000"},
              "aws_secret_access_key": "aws-secret-0987654321"}  # fmt: skip
    every_header = "trace-id-0000000"  # an extra_headers value counts whatever the header's name
    assert secrets_in(params) == {
        "grid-key-123456789",
        "Bearer hdr-token-abcdefgh",
        every_header,
        "aws-secret-0987654321",
    }
    assert "grid-key-123456789" not in redact("echo grid-key-123456789", secrets_in(params))


def test_a_worlds_mock_tokens_stay_in_the_transcript_byte_for_byte(monkeypatch):
    """The redactor is not applied to transcripts: a world's ``Bearer tk_…`` and client secrets are task
    data the grader reads. Fake keys in the environment change no transcript byte."""
    bank = load_bank(DEFAULT_BANK)
    task = bank.task("sample-w01-sub01")

    def record() -> str:
        r = play_trial_sync(
            TrialSpec(
                task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name,
                bank_hash=bank.hash, run_id="r", model_slug="oracle",
            ),
            make_model("apiflow/oracle", task, 1),
        )
        assert r.passed
        return r.model_copy(update={"duration_s": 0.0}).to_json()

    before = record()
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("WORLD_LIKE_TOKEN", "tk_loam_5521")  # even a key equal to a world token
    assert record() == before
    assert "Bearer tk_loam_5521" in before
    assert redact(before) != before  # which is exactly why transcripts are never passed through it


def test_the_adapter_boundary_redacts_provider_and_harness_faults(keyed_env, monkeypatch):
    import apiflow.models.faults as faults
    import apiflow.models.litellm_client as adapter

    client = adapter.LiteLLMClient("openai/stand-in", {"api_base": "http://127.0.0.1:9/v1", "api_key": PLAIN})
    openai_error = faults.provider_faults()

    async def provider_fault(attempt, log):
        log.append({"attempt": 1, "error": "APIError", "status": 500})
        raise openai_error(f"upstream said: Authorization: Bearer {KEY}; api_key={PLAIN}")

    async def harness_bug(attempt, log):
        raise ValueError(f"could not parse response for key {PLAIN}")

    client.retry = provider_fault
    with pytest.raises(faults.LiteLLMProviderError) as info:
        asyncio.run(client.generate([{"role": "user", "content": "hi"}], [], GenerateConfig()))
    assert KEY not in str(info.value) and PLAIN not in str(info.value) and REDACTED in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__  # the raw original stays out of logs
    assert info.value.retries == ({"attempt": 1, "error": "APIError", "status": 500},)

    client.retry = harness_bug
    with pytest.raises(faults.LiteLLMHarnessFault) as fault:
        asyncio.run(client.generate([{"role": "user", "content": "hi"}], [], GenerateConfig()))
    assert str(fault.value).startswith("ValueError: could not parse") and PLAIN not in str(fault.value)
    notes = "\n".join(fault.value.__notes__)
    assert "harness_bug" in notes and PLAIN not in notes  # where it happened, without the secret


def test_litellm_log_records_are_redacted(keyed_env, caplog):
    from apiflow.models.litellm_client import configure_litellm

    configure_litellm()
    with caplog.at_level(logging.DEBUG, logger="LiteLLM"):
        logging.getLogger("LiteLLM").warning("retrying with headers %s", {"Authorization": f"Bearer {KEY}"})
        try:
            raise RuntimeError(f"boom {PLAIN}")
        except RuntimeError:
            logging.getLogger("LiteLLM").exception("call failed")
    assert KEY not in caplog.text and PLAIN not in caplog.text and REDACTED in caplog.text


def test_a_credential_in_a_grid_models_extra_is_refused_in_one_line(tmp_path, capsys):
    """``extra`` is recorded in the manifest and hashed into trial ids; credentials belong in ``params``."""
    grid = tmp_path / "grid.yaml"
    grid.write_text(
        "models:\n  - model: apiflow/oracle\n    extra: {reasoning_effort: low, extra_headers: {x-api-key: abc}}\n"
    )
    from apiflow.cli import main

    assert main(["grid", "run", str(grid), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "extra.extra_headers.x-api-key looks like a credential" in err


KEY_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(
    key=st.text(KEY_CHARS, min_size=12, max_size=64),
    before=st.binary(max_size=7),
    after=st.binary(max_size=7),
    words=st.text(max_size=20),
)
def test_any_env_key_is_gone_from_any_text_in_any_form(key, before, after, words):
    """Property: an environment key leaves no plain, URL-encoded or base64 trace, at any alignment."""
    texts = [
        f"{words}{key}{words}",
        f"x={quote(key, safe='')}&y",
        base64.b64encode(before + key.encode() + after).decode(),
        base64.urlsafe_b64encode(before + key.encode() + after).decode(),
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FUZZ_API_KEY", key)
        for text in texts:
            cleaned = redact(text).encode()
            assert not any(needle in cleaned for needle in needles(key).values()), (text, cleaned)
