"""Every trap kind of REFERENCE §3, expressed as data in the sample world, behaves as published."""

from __future__ import annotations

import pytest

from apiflow.bank import DEFAULT_BANK, load_bank
from apiflow.world import HttpRequest, HttpResponse, TransportError, WorldSession

WORLD = load_bank(DEFAULT_BANK).worlds["w01"]
TOKEN = {"grant_type": "client_credentials", "client_id": "cid_loam_31", "client_secret": "csec_7d0e2b"}
BLOCK, MF, DSP = "blk-7e21-0410", "mf-3a9c-1107", "dsp-1107-6e4b"


class Client:
    """A tiny test client over one session."""

    def __init__(self, state: dict | None = None) -> None:
        self.session = WorldSession(WORLD, seed=1, state_overrides=state)
        self.token = ""

    def __call__(self, method: str, url: str, body=None, token: str | None = None, **headers: str) -> HttpResponse:
        hdrs = {k.replace("_", "-").lower(): v for k, v in headers.items()}
        bearer = self.token if token is None else token
        if bearer:
            hdrs["authorization"] = f"Bearer {bearer}"
        return self.session.send(HttpRequest(method, url, hdrs, body))

    def login(self, **extra: str) -> str:
        self.token = self("POST", "/v3/auth/token", {**TOKEN, **extra}, token="").body["access_token"]
        return self.token


# What earlier steps of the storyline leave behind; each step's route refuses to run without it.
PROGRESS = {"listing": {"blocks_p1": True, "block_ready": True}, "bins_counted": True, "reservation": True,
            "manifest": {"status": "draft", "committed_legs": 0},
            "tracking_started": True}


@pytest.fixture
def api() -> Client:
    client = Client(PROGRESS)
    client.login()
    return client


def test_server_semantics(api: Client) -> None:
    assert api("GET", "/v9/nothing").status == 404
    assert api("GET", "/v9/nothing").body == {"detail": "Not Found"}
    wrong = api("DELETE", "/v3/blocks")
    assert (wrong.status, wrong.body, wrong.headers["allow"]) == (405, {"detail": "Method Not Allowed"}, "GET")
    slash = api("GET", "/v3/blocks/?cursor=cur_b2")
    assert slash.status == 307
    assert slash.headers["location"] == "http://127.0.0.1:48213/v3/blocks?cursor=cur_b2"
    unmatched = api("POST", "/v3/auth/token", {"grant_type": "client_credentials"}, token="")
    assert unmatched.status == 401  # rule table answers: wrong client
    assert api("GET", "http://localhost:9001/v3/blocks").status == 200  # absolute URL on the spec server
    with pytest.raises(TransportError):
        api("GET", "http://elsewhere.example/v3/blocks")


def test_no_matching_mock_when_rules_run_out() -> None:
    world = WORLD.model_copy(update={"routes": [r for r in WORLD.routes if r.path != "/v3/blocks"] + [
        WORLD.routes[2].model_copy(update={"rules": WORLD.routes[2].rules[:1]})]})
    session = WorldSession(world, seed=1)
    session.send(HttpRequest("POST", "/v3/auth/token", {}, TOKEN))
    resp = session.send(HttpRequest("GET", "/v3/blocks?cursor=x", {"authorization": "Bearer tk_loam_5521"}))
    assert (resp.status, resp.body) == (404, {"error": "no_matching_mock"})


def test_client_credentials_grant_and_form_body() -> None:
    api = Client()
    bad = api("POST", "/v3/auth/token", {"grant_type": "password"})
    assert bad.status == 400 and bad.body["error"] == "unsupported_grant_type"
    form = api("POST", "/v3/auth/token", "grant_type=client_credentials&client_id=cid_loam_31&client_secret=csec_7d0e2b")
    assert form.status == 200 and form.body["access_token"] == "tk_loam_5521"
    assert api("POST", "/v3/auth/token", {**TOKEN, "client_secret": "nope"}).body["error"] == "invalid_client"


def test_bearer_missing_invalid_and_legacy_rejected() -> None:
    api = Client()
    assert api("GET", "/v3/blocks").body["error"] == "missing_token"
    assert api("GET", "/v3/blocks", token="tk_made_up").body["error"] == "invalid_token"
    legacy = api("POST", "/v1/auth/token", TOKEN)
    assert legacy.headers["x-deprecated"] == "true" and legacy.headers["sunset"]
    assert api("GET", "/v3/blocks", token=legacy.body["token"]).body["error"] == "legacy_token_rejected"


def test_scope_escalation_and_token_stale_after_n_uses(api: Client) -> None:
    state = {"manifest": {"status": "committed", "committed_legs": 3}}
    api.session.state = {**api.session.state, **state}
    denied = api("GET", f"/v3/dispatches/{DSP}/tracking")
    assert denied.status == 403 and "dispatch:track" in denied.body["hint"]
    api.login(scope="dispatch:track")
    statuses = [api("GET", f"/v3/dispatches/{DSP}/tracking").status for _ in range(4)]
    assert statuses == [200, 200, 200, 401]
    assert api("GET", f"/v3/dispatches/{DSP}/tracking").body["error"] == "token_expired"
    api.login(scope="dispatch:track")  # re-minting resets the use count
    assert api("GET", f"/v3/dispatches/{DSP}/tracking").status == 200


def test_decoy_deprecated_route_answers_with_decoy_values(api: Client) -> None:
    decoy = api("POST", "/v1/manifests", {"block_id": BLOCK})
    assert decoy.status == 201 and decoy.body["manifestId"] == "mf-legacy-0001"
    assert decoy.headers["x-deprecated"] == "true" and decoy.headers["x-superseded-by"] == "/v3/manifests"


def test_cursor_pagination_and_infinite_legacy_cursor(api: Client) -> None:
    first = api("GET", "/v3/blocks")
    second = api("GET", f"/v3/blocks?cursor={first.body['next_cursor']}")
    assert second.body["next_cursor"] is None
    assert [b["block_id"] for b in second.body["blocks"] if b["ready"]] == [BLOCK]
    loop = [api("GET", "/v1/blocks?cursor=cur_loop").body["next_cursor"] for _ in range(3)]
    assert loop == ["cur_loop"] * 3


def test_offset_limit_silent_clamp(api: Client) -> None:
    page = api("GET", f"/v3/blocks/{BLOCK}/bins?offset=0&limit=100")
    assert (len(page.body["bins"]), page.body["limit"], page.body["total"]) == (25, 25, 58)
    last = api("GET", f"/v3/blocks/{BLOCK}/bins?offset=50&limit=25")
    assert last.body["bins"][-1]["bin_id"] == "bin-7e21-058" and len(last.body["bins"]) == 8


def test_stale_summaries(api: Client) -> None:
    assert api("GET", "/v3/stats/harvest").body["bins_total"] == 52  # the live feed says 58
    assert api("GET", "/v3/dispatches/summary").body["last_status"] == "in_transit"


def test_link_header_pagination(api: Client) -> None:
    api.session.state = {**api.session.state, "manifest": {"status": "committed", "committed_legs": 3}}
    api.login(scope="dispatch:track")
    page = api("GET", f"/v3/dispatches/{DSP}/events")
    assert page.headers["link"].endswith('events?page=2>; rel="next"')
    page = api("GET", f"/v3/dispatches/{DSP}/events?page=2")
    last = api("GET", f"/v3/dispatches/{DSP}/events?page=3")
    assert "link" not in last.headers and last.body["events"][-1]["proof_ref"] == "pod-3390-a71c"


@pytest.mark.parametrize(
    ("headers", "body", "status", "error"),
    [
        ({}, {"block_id": BLOCK}, 400, "missing_orchard"),
        ({"x_orchard_id": "orch-other"}, {"block_id": BLOCK}, 403, "orchard_mismatch"),
        ({"x_orchard_id": "orch-loamwise-04"}, {"block_id": BLOCK, "cold_room": "cr-2"}, 422, "unknown_field"),
        ({"x_orchard_id": "orch-loamwise-04"}, {"block_id": BLOCK, "coldRoom": "cr-2"}, 422, "missing_required"),
        ({"x_orchard_id": "orch-loamwise-04"}, {"block_id": BLOCK, "coldRoom": "cr-2", "crew": "cl-19"}, 422, "invalid_structure"),
        ({"x_orchard_id": "orch-loamwise-04"}, {"block_id": BLOCK, "coldRoom": "cr-2", "crew": {"lead_id": "cl-19", "size": "4"}}, 422, "invalid_type"),
        ({"x_orchard_id": "orch-loamwise-04"}, {"block_id": BLOCK, "coldRoom": "cold", "crew": {"lead_id": "cl-19", "size": 4}}, 422, "invalid_enum"),
        ({"x_orchard_id": "orch-loamwise-04"}, {"block_id": BLOCK, "coldRoom": "cr-2", "crew": {"lead_id": "cl-19", "size": 4}}, 201, None),
    ],
)
def test_undocumented_header_and_schema_drift(api: Client, headers, body, status, error) -> None:
    resp = api("POST", "/v3/manifests", body, **headers)
    assert resp.status == status
    if error:
        assert resp.body["error"] == error and resp.body["hint"]
    else:
        assert resp.body["manifest_id"] == MF


def test_invalid_enum_hint_echoes_the_submitted_value(api: Client) -> None:
    body = {"block_id": BLOCK, "coldRoom": "cr-9", "crew": {"lead_id": "cl-19", "size": 4}}
    assert "'cr-9'" in api("POST", "/v3/manifests", body, x_orchard_id="orch-loamwise-04").body["hint"]


def test_each_step_refuses_to_run_before_its_predecessor() -> None:
    api = Client()
    api.login()
    assert api("GET", "/v3/blocks?cursor=cur_b2").body["error"] == "invalid_cursor"  # page 1 never fetched
    assert api("GET", f"/v3/blocks/{BLOCK}/bins").body["error"] == "block_not_found"  # block never listed
    api("GET", "/v3/blocks")
    api("GET", "/v3/blocks?cursor=cur_b2")
    api("GET", f"/v3/blocks/{BLOCK}/bins?offset=0")
    body = {"block_id": BLOCK, "coldRoom": "cr-2", "crew": {"lead_id": "a", "size": 4}}
    assert api("POST", "/v3/manifests", body, x_orchard_id="orch-loamwise-04").body["error"] == "bins_not_counted"
    api("GET", f"/v3/blocks/{BLOCK}/bins?offset=50")
    assert api("GET", "/v3/cold-rooms/cr-2/capacity", x_retry_pass="1").body["error"] == "no_manifest"
    assert api("POST", "/v3/manifests", body, x_orchard_id="orch-loamwise-04").status == 201
    assert api("POST", f"/v3/manifests/{MF}/commit", {"confirm": True}).body["error"] == "no_reservation"


def test_link_pages_are_issued_in_order(api: Client) -> None:
    api.session.state = {**api.session.state, "manifest": {"status": "committed", "committed_legs": 3}}
    api.login(scope="dispatch:track")
    assert api("GET", f"/v3/dispatches/{DSP}/events?page=3").body["error"] == "invalid_page"


def test_partial_write_503_then_confirm_and_type_drift(api: Client) -> None:
    api("POST", "/v3/manifests", {"block_id": BLOCK, "coldRoom": "cr-2", "crew": {"lead_id": "a", "size": 4}},
        x_orchard_id="orch-loamwise-04")
    first = api("POST", f"/v3/manifests/{MF}/commit", {})
    assert first.status == 503 and first.body["error"] == "commit_interrupted" and "confirm" in first.body["hint"]
    read = api("GET", f"/v3/manifests/{MF}")
    assert read.body["committed_legs"] == "2"  # string on reads, int on writes
    done = api("POST", f"/v3/manifests/{MF}/commit", {"confirm": True})
    assert done.status == 200 and done.body["dispatch_ref"] == DSP and done.body["committed_legs"] == 3


def test_commit_of_a_manifest_never_created_is_not_found() -> None:
    api = Client({k: v for k, v in PROGRESS.items() if k != "manifest"})
    api.login()
    assert api("POST", f"/v3/manifests/{MF}/commit", {"confirm": True}).status == 404


def test_rate_limit_429_with_retry_after_then_retry_header(api: Client) -> None:
    throttled = api("GET", "/v3/cold-rooms/cr-2/capacity")
    assert throttled.status == 429 and throttled.headers["retry-after"] == "2"
    ok = api("GET", "/v3/cold-rooms/cr-2/capacity", x_retry_pass="1")
    assert ok.body["reservation_ref"] == "rsv-5d02-8841"


def test_billed_irreversible_action_refuses(api: Client) -> None:
    resp = api("POST", f"/v3/dispatches/{DSP}/expedite", {})
    assert resp.status == 403 and "irreversible" in resp.body["hint"]


def test_header_values_must_be_strings() -> None:
    session = WorldSession(WORLD, seed=1)
    with pytest.raises(TransportError) as err:
        session.send(HttpRequest("GET", "/v3/blocks", {"x-a": {"b": 1}}))  # type: ignore[dict-item]
    assert err.value.kind == "invalid"


def test_sessions_do_not_share_state_and_replay_identically() -> None:
    def run() -> list:
        api = Client()
        api.login()
        return [api("POST", f"/v3/manifests/{MF}/commit", {}).status, api("GET", "/v3/blocks").headers["date"]]

    assert run() == run()
    assert WORLD.state.get("manifest") is None
