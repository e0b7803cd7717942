"""The router: an OpenAI-compatible gateway with flow control in front of a model-server pool.

``build_router(config, settings, clock)`` gives a :class:`RouterApp` (ASGI) over a
:class:`Gateway`; ``sluiceway router`` serves it. See docs/router.md.

Import from the module that defines a name (``sluiceway.router.app.RouterApp``,
``sluiceway.router.build.build_router``): this package re-exports nothing, so loading one
submodule never pulls in the HTTP stack and jump-to-definition lands on the definition.

Files:

- ``app``: the ASGI application, and the seam where a coordinator mounts (with its API-key
  check and drain hook); ``routes``: the route table (per path: methods, what answers it, how
  a proxied body is costed); ``trust``: which callers may set the objective and fairness
  headers;
- ``gateway``: the request path (read, admit, proxy, finish), with ``exchange``, one proxied
  request's live state; ``limits``: how large a request's body and headers may be (413, 431);
  ``identity``: who a request is, from its headers (pure);
  ``request_facts``: what its body asks for (model, stream, token estimate by the route's
  cost rule, prefix; pure); ``failover``: a request whose endpoint failed before the response
  moved to another;
- ``flow``: admission (flow control, or legacy shedding) and the endpoint at dispatch;
  ``retry_after``: the ``Retry-After`` of its 429 and 503 answers, from the queue ahead and the
  pool's drain rate (pure); ``pool_ledger``: its side of the capacity ledger several replicas
  share (``--ledger``: others' leases and waiting demand in the view, eviction orders);
  ``objectives``: InferenceObjective name -> priority, from ``objective_files`` (a file or
  directory, reloaded on change) or ``kube`` (the Kubernetes API, list then watch);
  ``path_watch``: a file or directory reloaded when it changes; ``kube_watch``: the
  list-then-watch loop over Kubernetes objects, shared by the objective and Pod watches;
- ``pool``: the endpoint pool (model servers, health, in-flight counts); ``served_models``:
  each endpoint's models, learned from its ``/v1/models``; ``load``: per-endpoint
  load as the detector and picker see it; ``picker``: the model server for one request (pure);
  ``measured_load``: load read from each endpoint's vLLM metrics, the router's own counts
  filling the gaps (pure); ``load_scraper``: the loop that scrapes them;
- ``membership``: the pool's members as the union of its sources, which ``discovery`` builds
  from the flags: ``endpoint_file`` (``--endpoints-file``, watched), ``dns_discovery`` (every
  address of a name), ``pod_watch`` (the ready Pods of an InferencePool or selector, read by
  ``inference_pool``, pure);
- ``proxy``: the upstream call, its answer relayed as it comes; ``sse``: server-sent events
  passed through, the ``usage`` chunk captured; ``outcomes``: the answers the router makes
  itself (drops, evictions, errors);
- ``metrics``: the Prometheus metrics (``llm_d_epp_`` names, and sluiceway's own count of
  failed model-server calls);
- ``observed_app``: the app with its operator signals (access log, HTTP metrics, traces), what
  ``build`` serves; ``current_request``: the record of the request a task serves, and the facts
  the gateway adds to it.

Start-up: ``settings`` (one router process's frozen settings), ``build`` (a router from its
configuration files), ``serve`` (the long-running form), ``command`` (``sluiceway router``).
"""
