"""The async processor. Its files read in the order a request travels:

1. queue entry: a ZSET member scored by its deadline (``sluiceway.broker``);
2. ``ingest``: decode, expired or unfinishable? (one ``EntryDecision`` per entry, the values
   in ``entry_decision``; a poison entry or a failing poll in ``ingest_faults``, with
   ``poison``: reserved result routes, faults told once); the queue is read by
   deadline, or newest first while it is overloaded (``queue_order`` measures the oldest
   request's wait, ``overload_order`` decides);
3. ``gating``: the queue gate (Continue / Wait / Refuse / Error / Drop; a quota gate returns
   its classification in the decision); then cancelled?, and the batch claim;
4. ``ready_buffer``: a few claimed requests per queue, bounded near the worker count;
5. ``lane_scheduler``: six strict lanes, round-robin across queues, earliest deadline first
   (latest first for a queue read newest first);
6. ``worker``: cancelled? expired? unfinishable in the time left (``service_time``, the
   per-queue dispatch-to-answer estimate)? then ``gating`` again for the pool gate, parked
   while it says wait (``parking``: re-tried best first, answered at once once unfinishable);
7. ``upstream`` (with ``headers``, watched by ``cancel_watch``): one HTTP attempt; ``resume``
   continues an evicted completion from the text it had already generated;
8. ``outcome`` (with ``retry`` and ``results``): finish with a result or retry (pure);
9. ``recorder``: exactly one of ack-with-result, retry, release;
10. broker ack: the result pushed and the claim dropped in one fenced step.

Around the path: ``work_item`` (one claimed request on its way through a pool, and its
resources), ``service`` (the ``Processor``), ``runtime`` (shared state), ``wakeups``
(who wakes whom), ``maintenance`` (heartbeat, reclaimer, retry mover, backlog), ``metrics``,
``specs`` (runtime settings), ``build``, ``serve``, ``http_app``, ``command`` (with
``legacy_flags``, upstream's deprecated flags), ``producer``, ``reload``, ``mixed_fleet``
(the start-up check for other consumers' claims), ``guide_spec``. Pure parts:
``lane_scheduler``, ``retry``, ``outcome``, ``results``, ``headers``, ``gating``,
``service_time``, ``overload_order``, ``poison``.
"""
