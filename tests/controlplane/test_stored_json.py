"""JSON columns sent on as stored (``api/stored_json.py``): only stored text of the model's shape and
valid as JSON is spliced; anything else goes back through the response model. The GET answer equals the
model's is checked end to end by tests/controlplane/test_resources.py (``got.json() == c``)."""

from __future__ import annotations

import collections
import datetime as dt
import json

from velyrix.controlplane.api import schemas, stored_json
from velyrix.controlplane.api.routes import clusters


def test_only_stored_text_of_the_right_shape_and_valid_json_is_spliced() -> None:
    assert stored_json.stored('{"a": 1}', dict) == '{"a": 1}'
    assert stored_json.stored("[]", list) == "[]"
    assert stored_json.stored("[1]", dict) is None  # a list where the model wants an object
    assert stored_json.stored({"a": 1}, dict) is None  # decoded by the driver
    assert stored_json.stored('{"x": NaN}', dict) is None  # json.dumps writes it, JSON has no NaN
    assert stored_json.stored('[{"x": -Infinity}]', list) is None


class _Row:
    id, tenant_id, name, region, node_type = "clu_1", "ten_1", 'a "quoted" name', "us-east-1", "hgx-h200-8g"
    node_count, desired_state, version, phase = 4, "present", 3, "Pending"
    created_at = updated_at = dt.datetime(2026, 12, 1, 17, 0, 0, 123456, tzinfo=dt.UTC)
    spec, plan = json.dumps({"name": "a", "nodes": [1, 2]}), json.dumps({"gpus": 32, "note": "é"})
    conditions, phase_history, events = json.dumps([{"type": "Planned"}]), "[]", json.dumps([{"e": 1}])


def test_spliced_body_is_the_models_json() -> None:
    row = _Row()
    data = clusters.out(row) | {"spec": json.loads(row.spec), "plan": json.loads(row.plan)}
    data["status"] |= {n: json.loads(getattr(row, n)) for n in ("conditions", "phase_history", "events")}
    body = clusters._spliced(row)
    assert body is not None
    assert json.loads(body) == json.loads(schemas.ClusterOut.model_validate(data).model_dump_json())
    assert list(json.loads(body)) == list(schemas.ClusterOut.model_fields)
    row.plan = '{"gpus": NaN}'
    assert clusters._spliced(row) is None


def test_a_kept_body_serves_only_a_row_equal_in_every_column() -> None:
    row = collections.namedtuple("row", "id version events")
    bodies = stored_json.Bodies(max_entries=2, max_bytes=10)
    bodies.put(row("clu_1", 1, "[]"), b"one")
    assert bodies.get(row("clu_1", 1, "[]")) == b"one"
    assert bodies.get(row("clu_1", 1, '[{"e": 1}]')) is None  # a column moved on, the version did not
    assert bodies.get(row("clu_1", 2, "[]")) is None
    assert bodies.get(row("clu_2", 1, "[]")) is None
    bodies.put(row("clu_2", 1, "[]"), b"x" * 11)  # over max_bytes: built again each time
    assert bodies.get(row("clu_2", 1, "[]")) is None
    bodies.put(row("clu_2", 1, "[]"), b"two")
    bodies.put(row("clu_3", 1, "[]"), b"three")  # full: dropped whole, then kept
    assert bodies.get(row("clu_1", 1, "[]")) is None and bodies.get(row("clu_3", 1, "[]")) == b"three"
