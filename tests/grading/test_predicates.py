"""G1 predicates under both rule sets, including unsettled (unknown-body) evidence."""

from __future__ import annotations

import json

from apiflow.grading.predicates import data_flow, new_response, workspace_values
from apiflow.grading.rules import PUBLISHED, STRICT
from apiflow.grading.spec import DataFlowSpec, NewResponseSpec, WorkspaceValueSpec

from .helpers import Script

AUTH = {"Authorization": "Bearer tk_1"}


def flow(**kw: object) -> DataFlowSpec:
    base: dict[str, object] = {
        "from_response_url_pattern": r"v3/batches",
        "from_body_key": "batches.item_count",
    }
    return DataFlowSpec.model_validate({**base, **kw})


# -- data_flow: carrying the key -------------------------------------------------------------


def test_published_matches_the_last_key_segment_at_any_depth() -> None:
    s = Script()
    s.execute({"method": "GET", "url": "/v3/batches/b-1"}, body={"batch": {"item_count": 5}})
    assert data_flow(flow(), s.evidence(), PUBLISHED, 1).passed is True
    assert data_flow(flow(), s.evidence(), STRICT, 1).passed is False  # no root "batches" list


def test_strict_walks_a_dotted_path_through_lists() -> None:
    s = Script()
    s.execute({"method": "GET", "url": "/v3/batches"}, body={"batches": [{"item_count": 5}, {"id": 2}]})
    assert data_flow(flow(), s.evidence(), STRICT, 1).passed is True
    assert data_flow(flow(from_body_key="batches.missing"), s.evidence(), STRICT, 1).passed is False


def test_url_regex_and_status_must_both_match() -> None:
    s = Script()
    s.execute({"method": "GET", "url": "/v2/batches"}, body={"item_count": 5})
    s.execute({"method": "GET", "url": "/v3/batches"}, status=503, body={"item_count": 5})
    outcome = data_flow(flow(), s.evidence(), PUBLISHED, 3)
    assert outcome.passed is False
    assert outcome.message == (
        "data_flow predicate #3 failed: no response matched url~'v3/batches' status in [200] "
        "carrying body key 'batches.item_count'"
    )
    assert data_flow(flow(from_status=503), s.evidence(), PUBLISHED, 1).passed is True


def test_network_errors_are_requests_without_responses() -> None:
    s = Script()
    s.network_error({"method": "GET", "url": "/v3/batches"})
    ev = s.evidence()
    assert len(ev.exchanges) == 1 and not ev.exchanges[0].has_response
    assert data_flow(flow(), ev, PUBLISHED, 1).passed is False


# -- data_flow: re-use and storing -----------------------------------------------------------


def used(**kw: object) -> DataFlowSpec:
    return flow(
        from_response_url_pattern="v3/snapshots/latest",
        from_body_key="snapshot_id",
        used_in_request_url_pattern="/v3/alerts",
        **kw,
    )


def test_value_must_reappear_in_url_headers_or_body_of_a_matching_request() -> None:
    for request in (
        {"method": "POST", "url": "/v3/alerts", "body": {"snapshot": "snap-9"}},
        {"method": "GET", "url": "/v3/alerts?snap=snap-9"},
        {"method": "POST", "url": "/v3/alerts", "headers": {"X-Snap": "snap-9"}},
    ):
        s = Script()
        s.execute({"method": "GET", "url": "/v3/snapshots/latest"}, body={"snapshot_id": "snap-9"})
        s.execute(request, status=201, body={})
        assert data_flow(used(), s.evidence(), PUBLISHED, 1).passed is True, request


def test_value_not_reused_fails_with_the_values_named() -> None:
    s = Script()
    s.execute({"method": "GET", "url": "/v3/snapshots/latest"}, body={"snapshot_id": "snap-9"})
    s.execute({"method": "POST", "url": "/v3/alerts", "body": {"snapshot": "snap-OTHER"}}, body={})
    s.execute({"method": "POST", "url": "/v3/other", "body": {"snapshot": "snap-9"}}, body={})
    outcome = data_flow(used(), s.evidence(), PUBLISHED, 2)
    assert outcome.passed is False
    assert outcome.message == (
        "data_flow predicate #2 failed: value(s) ['snap-9'] were not used in any request to url~'/v3/alerts'"
    )


def test_any_time_versus_later_use() -> None:
    s = Script()
    s.execute({"method": "POST", "url": "/v3/alerts", "body": {"snapshot": "snap-9"}}, body={})
    s.execute({"method": "GET", "url": "/v3/snapshots/latest"}, body={"snapshot_id": "snap-9"})
    assert data_flow(used(), s.evidence(), PUBLISHED, 1).passed is True
    strict = data_flow(used(), s.evidence(), STRICT, 1)
    assert strict.passed is False and "any later request" in strict.message


def test_must_be_stored_substring_versus_equal_leaf() -> None:
    spec = flow(
        from_response_url_pattern="v3/inspections",
        from_body_key="inspection_id",
        from_status=201,
        must_be_stored=True,
    )
    s = Script()
    s.execute({"method": "POST", "url": "/v3/inspections"}, status=201, body={"inspection_id": "insp-1"})
    assert data_flow(spec, s.evidence(), PUBLISHED, 1).passed is False
    s.write_variable("note", "minted insp-1 today")
    assert data_flow(spec, s.evidence(), PUBLISHED, 1).passed is True
    assert data_flow(spec, s.evidence(), STRICT, 1).passed is False
    s.write_variable("ids", {"latest": "insp-1"})
    assert data_flow(spec, s.evidence(), STRICT, 1).passed is True


# -- data_flow: unknown bodies ---------------------------------------------------------------


def cut(body: dict[str, object]) -> str:
    return json.dumps(body)[:600] + "…"


def test_cut_preview_never_read_is_unsettled_not_failed() -> None:
    body = {"padding": "x" * 700, "item_count": 5}
    s = Script()
    ref = s.execute({"method": "GET", "url": "/v3/batches"}, preview=cut(body))
    ev = s.evidence()
    assert not ev.exchanges[0].body_known
    outcome = data_flow(flow(), ev, PUBLISHED, 1)
    assert outcome.passed is None and "no response matched" in outcome.message
    s.read_response(ref, body)  # a later read reveals the full body
    assert data_flow(flow(), s.evidence(), PUBLISHED, 1).passed is True


def test_key_visible_before_the_cut_settles_presence() -> None:
    body = {"item_count": 5, "padding": "x" * 700}
    s = Script()
    s.execute({"method": "GET", "url": "/v3/batches"}, preview=cut(body))
    assert data_flow(flow(), s.evidence(), PUBLISHED, 1).passed is True
    # strict counts only bodies the agent saw whole: a cut, unread preview settles "not carried"
    assert data_flow(flow(), s.evidence(), STRICT, 1).passed is False


def test_known_pass_wins_over_an_unknown_body() -> None:
    s = Script()
    s.execute({"method": "GET", "url": "/v3/batches"}, preview=cut({"padding": "x" * 700}))
    s.execute({"method": "GET", "url": "/v3/batches"}, body={"item_count": 5})
    assert data_flow(flow(), s.evidence(), PUBLISHED, 1).passed is True


# -- new_response ----------------------------------------------------------------------------


def test_new_response_matches_url_and_optional_status_and_method() -> None:
    s = Script()
    s.execute({"method": "post", "url": "http://localhost:9001/v3/fields?x=1"}, status=201, body={"id": 1})
    ev = s.evidence()
    assert new_response(NewResponseSpec(url_pattern="v3/fields"), ev, PUBLISHED, 1).passed is True
    assert (
        new_response(
            NewResponseSpec(url_pattern="v3/fields", method="POST", status=201), ev, PUBLISHED, 1
        ).passed
        is True
    )
    miss = new_response(NewResponseSpec(url_pattern="v3/fields", status=200), ev, PUBLISHED, 4)
    assert miss.passed is False
    assert miss.message.startswith("no new response matched predicate #4: {'explain': ''")
    assert (
        "available=[{'status': 201, 'url': 'http://localhost:9001/v3/fields?x=1', 'method': 'POST', "
        "'body_keys': ['id']}]" in miss.message
    )
    assert (
        new_response(NewResponseSpec(url_pattern="v3/fields", method="GET"), ev, PUBLISHED, 1).passed is False
    )


def test_new_response_needs_a_response_not_just_a_request() -> None:
    s = Script()
    s.network_error({"method": "GET", "url": "/v3/fields"})
    assert new_response(NewResponseSpec(url_pattern="v3/fields"), s.evidence(), PUBLISHED, 1).passed is False


# -- workspace_values ------------------------------------------------------------------------


def test_workspace_value_is_a_substring_of_a_final_variable_value() -> None:
    spec = WorkspaceValueSpec(value="/v3/positions")
    s = Script()
    s.write_variable("endpoint", "GET /v3/positions?id=1", scope="global")
    assert workspace_values(spec, s.evidence(), 1).passed is True
    s.write_variable("endpoint", "/v2/locations", scope="global")  # overwritten: no longer counts
    outcome = workspace_values(spec, s.evidence(), 2)
    assert outcome.passed is False
    assert outcome.message == (
        "workspace_values #2 value '/v3/positions' not found in the agent's new/changed workspace state"
    )


def test_written_request_entities_do_not_count_as_stored() -> None:
    s = Script()
    s.write_request("commit", {"method": "GET", "url": "/v3/positions"})
    assert workspace_values(WorkspaceValueSpec(value="/v3/positions"), s.evidence(), 1).passed is False
