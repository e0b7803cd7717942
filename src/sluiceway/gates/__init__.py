"""Gates: admission decisions at queue and pool level.

- ``base``: the ``Gate`` protocol, verdicts and decisions, ``BudgetGate``, ``apply_chain``; the
  ``Feedback`` protocol of gates that learn from answers, and its ``FeedbackRelay``.
- ``pool_share``: one processor's part of a pool-wide in-flight target when several serve
  the pool (pure: the split by live membership).
- ``context``: ``GateContext``, what every builder is given (``ctx.build`` for nested gates).
- ``factory``: the one table of gate type -> builder (``BUILDERS``) and ``build_gate``; the
  names and parameter models are ``sluiceway.config.gate_params``'s.
- Gate types, one module each, each exposing ``build(params, ctx)``: ``constant``,
  ``local_concurrency`` (``local-max-concurrency``), ``quota`` (``redis-quota``,
  ``sql-quota``), ``composite``, ``wait_on_refuse``, ``tier_priority``
  (``tier-priority-admission``), and the metric gates ``prometheus_query``,
  ``prometheus_saturation``, ``prometheus_budget``, ``endpoint_scrape``, ``budget_key``
  (``redis``), ``leased_rate`` (``redis-leased-rate``); the feedback gate ``aimd`` (an
  in-flight window per pool, moved by the router's answers and a signal).
- ``aimd_window``: the ``aimd`` gate's window logic (pure: slow start, additive increase,
  one multiplicative cut per flight, the Retry-After hold).
- Shared by the gate types: ``metric`` (a gate over a signal, the signal hub), ``pool_queries``
  (the PromQL of the pool gates), ``quota_store`` (the quota counter protocol and its memory
  store), ``redis_backend`` (the Redis stores the metric gates read).
"""
