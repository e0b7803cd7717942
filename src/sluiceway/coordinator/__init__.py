"""The coordinator: the HTTP front door that lets each request choose how it runs.

The path of a request, by file:

1. ``app.py``: the route; the mode header (``intake.py``) decides the rest, and a request
   without one is forwarded untouched through ``forwarding.py``; ``methods.py``: the methods
   each own path takes (405 with ``Allow`` for the others); ``request_ids.py``: the
   ``x-request-id`` every answer carries (the caller's, or one minted and passed on).
2. ``identity.py``: the tenant (API key, or the trusted tenant header).
3. ``intake.py``: body, model (``routes.py``: served models, queue and tier), request id,
   deadline (a wait-mode deadline cut to the tenant's patience learned by ``patience.py``).
4. passthrough: ``passthrough.py`` classifies against the tenant's quota and stamps objective
   and fairness headers; ``forwarding.py`` calls the router (over HTTP, or in process when
   mounted in it); ``responses.py`` relays the stream
   and notices a client that leaves.
5. wait / enqueue: ``validation.py`` refuses a body a model server would refuse and
   ``catalog.py`` a model the gateway does not list, before anything is queued;
   ``mailbox.py`` queues the envelope through the broker's producer (or
   re-attaches by id) and, for wait, holds the connection until the result lands;
   ``answers.py`` turns the stored result into the HTTP answer.
6. the Batch API: ``batch_routes.py``, ``/v1/files`` and ``/v1/batches`` (the work is in
   ``sluiceway.batch``); ``batches.py`` builds its service, lines checked and placed as
   queued requests are.
7. ``server.py`` opens the broker and quota store from a config file, and mounts the
   coordinator in a router (``mount_coordinator``);
   ``command.py`` is ``sluiceway coordinator``.

Beside the path: ``metrics.py``, the coordinator's own metrics (names in ``observability.names``);
``probes.py``, ``/healthz``, ``/readyz`` and ``/metrics``; ``observed.py``, its access log,
HTTP metrics and traces, and its metrics on the router's page when mounted.
"""
