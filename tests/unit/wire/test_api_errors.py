from __future__ import annotations

import json

from sluiceway.wire.api_errors import error_body, error_document


def test_the_envelope_is_what_the_openai_client_parses() -> None:
    doc = error_document("no such model", type="not_found_error", code="model_not_found")
    assert doc == {
        "error": {"message": "no such model", "type": "not_found_error", "code": "model_not_found"}
    }
    assert json.loads(error_body("x", type="server_error")) == {
        "error": {"message": "x", "type": "server_error", "code": None}
    }
