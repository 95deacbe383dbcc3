"""Error text from any model or agent is redacted before it reaches a record or a log line.

The litellm adapter redacts at its exception boundary; a plug-in's model (or an external agent)
is code apiflow does not control, so its exception text — which may quote the operator's keys —
is redacted where every error text enters a trial record (``apiflow.agent.loop.harness_error_text``),
with the environment's credentials and the model's params' secrets.
"""

from __future__ import annotations

import logging

import pytest
from pluginkit import on_path, write_dist
from secretscan import needles

from apiflow.agent import TrialSpec
from apiflow.agent.loop import harness_error_text, model_secrets
from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.models import make_model
from apiflow.redact import REDACTED, secrets_in
from apiflow.runner import play_trial_sync

ENV_KEY = "sk-live-0123456789abcdef0123"
ENV_PLAIN = "PLAINenvSECRET-leaky-24680"  # not credential-shaped: only its env name makes it secret
PARAM_KEY = "gridPARAMplain-11223344"
HEADER_VALUE = "v-secret-abcdef123456"
PARAMS = {"api_key": PARAM_KEY, "extra_headers": {"X-Custom": HEADER_VALUE}}
SECRETS = {"env key": ENV_KEY, "env plain": ENV_PLAIN, "param key": PARAM_KEY, "custom header": HEADER_VALUE}

# Every way a plug-in's text can end a trial: its generate raises, raises a ProviderError (passed
# through as the plug-in's own provider outcome), or its factory raises. Each quotes every secret
# many times over, so wherever a message is cut (500, 2,000 characters) the cut falls inside one.
SOURCE = """
    import base64, os
    from apiflow.models import ProviderError

    def leak(params):
        key, plain = os.environ["LEAKY_PROVIDER_API_KEY"], os.environ["LEAKY_SERVICE_TOKEN"]
        quoted = f"key {key} plain {plain} param {params['api_key']} headers {params['extra_headers']}"
        blob = base64.b64encode(f"user:{key}".encode()).decode()
        return " | ".join([quoted + f" basic {blob}"] * 40)

    class Agent:
        def __init__(self, name, params):
            self.model_api, self.params = name, params

        async def generate(self, messages, tools, config):
            if self.model_api.endswith("/provider"):
                raise ProviderError("upstream refused: " + leak(self.params))
            raise RuntimeError("request failed: " + leak(self.params))

    def make_model(name, task, seed, params):
        if name.endswith("/factory"):
            raise ValueError("cannot build: " + leak(params))
        return Agent(name, params)
"""
TASK = "sample-w01-sub01"


@pytest.fixture
def leaky(tmp_path, monkeypatch):
    monkeypatch.setenv("LEAKY_PROVIDER_API_KEY", ENV_KEY)
    monkeypatch.setenv("LEAKY_SERVICE_TOKEN", ENV_PLAIN)
    write_dist(tmp_path, "leakyplug", "leakyplug", SOURCE, {"leaky": "leakyplug:make_model"})
    with on_path(tmp_path):
        yield


@pytest.mark.parametrize(
    ("name", "termination"),
    [
        ("leaky/generate", "no_answer"),  # the agent's own failure: scored (AgentFault)
        ("leaky/provider", "no_answer"),  # its own provider's: apiflow never saw that wire
        ("leaky/factory", "harness_error"),
    ],
)
def test_a_plugins_error_text_reaches_no_record_or_log_with_a_key(leaky, caplog, name, termination):
    bank = load_bank(DEFAULT_BANK)
    task = bank.task(TASK)
    spec = TrialSpec(
        task=task, world=bank.world_of(task), seed=0, epoch=1, bank_name=bank.name, bank_hash=bank.hash,
        run_id="r", model_slug="leaky",
    )  # fmt: skip
    with caplog.at_level(logging.DEBUG):
        record = play_trial_sync(spec, make_model(name, task, 1, PARAMS))
    assert record.apiflow.termination == termination
    assert record.verdict == ("I" if termination == "no_answer" else "")
    assert REDACTED in (record.apiflow.harness_error or record.apiflow.agent_error or "")
    dumped = record.to_json()
    logged = caplog.text + "".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)
    for label, secret in SECRETS.items():
        for form, needle in needles(secret).items():
            assert needle.decode() not in dumped, f"{label} ({form}) in the record"
            assert needle.decode() not in logged, f"{label} ({form}) in the log"


def test_every_extra_headers_value_is_a_secret():
    assert secrets_in({"extra_headers": {"X-Custom": HEADER_VALUE}}) == {HEADER_VALUE}
    assert secrets_in({"api_base": "http://127.0.0.1:1/v1", "headers": {"X-Org": "org-secret-998877"}}) == {
        "org-secret-998877"
    }


def test_harness_error_text_redacts_the_environment_and_the_models_secrets(monkeypatch):
    monkeypatch.setenv("LEAKY_SERVICE_TOKEN", ENV_PLAIN)

    class Inner:
        secrets = frozenset({PARAM_KEY})

    class Wrapper:  # a budget-like wrapper: the secrets are found through ``inner``
        inner = Inner()

    secrets = model_secrets(Wrapper())
    assert secrets == {PARAM_KEY}
    text = harness_error_text(RuntimeError(f"{'z' * 1995}{ENV_PLAIN} {PARAM_KEY}"), secrets)
    assert ENV_PLAIN[:5] not in text and PARAM_KEY not in text  # redacted first, then cut
    assert harness_error_text(RuntimeError("plain fault 42")) == "RuntimeError: plain fault 42"
