"""The coordinator seam: requests with a mode header go to a mounted app, whose passthrough
calls the router in process (``handle_local``) with its stamped headers trusted."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import aiohttp
from router_harness import OBJECTIVE, body, running_router

from sluiceway.router.app import LocalRequest
from sluiceway.sim import SimConfig

SIM = SimConfig(time_to_first_token=0.005, inter_token_latency=0.001, label_headers=(OBJECTIVE,))

TRUSTED = """
apiVersion: llm-d.ai/v1
kind: EndpointPickerConfig
featureGates: [flowControl]
trustedSources: {cidrs: ["10.0.0.0/8"]}
"""


async def test_mode_header_goes_to_the_mounted_app_and_passthrough_is_in_process() -> None:
    seen: list[str] = []
    async with running_router(TRUSTED, sim=SIM, objectives={"stamped": 50}) as rig:

        async def coordinator(scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
            seen.append(scope["path"])
            if scope["path"].startswith("/v1/requests/"):
                await send({"type": "http.response.start", "status": 202, "headers": []})
                await send({"type": "http.response.body", "body": b"{}"})
                return
            headers = [(n, v) for n, v in scope["headers"] if n != OBJECTIVE.encode()]
            headers.append((OBJECTIVE.encode(), b"stamped"))
            raw = (await receive())["body"]

            async def vanished() -> None:
                while (await receive())["type"] != "http.disconnect":
                    pass

            request = LocalRequest(scope["method"], scope["path"], headers, raw, vanished)
            await rig.app.handle_local(request, send)

        rig.app.mount_coordinator(coordinator)
        async with aiohttp.ClientSession() as s:
            mode = {"x-llm-d-async-mode": "passthrough", OBJECTIVE: "forged"}
            async with s.post(rig.url + "/v1/completions", json=body(), headers=mode) as r:
                assert r.status == 200
            # Straight to the router: an untrusted caller's identity header is stripped.
            direct = {OBJECTIVE: "forged"}
            async with s.post(rig.url + "/v1/completions", json=body(), headers=direct) as r:
                assert r.status == 200
            async with s.get(rig.url + "/v1/requests/abc") as r:
                assert r.status == 202
        assert seen == ["/v1/completions", "/v1/requests/abc"]
        labels = rig.sim.engines[0].max_running_by_label(OBJECTIVE)
        assert labels == {"stamped": 1}
