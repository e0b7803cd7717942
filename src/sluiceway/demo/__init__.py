"""``sluiceway demo``: the whole system in one process, with the guide's scenarios checked.

No external service is needed (docs/design-rules.md rule 24): the simulator stands in for vLLM
and the memory broker for Redis (``--redis`` uses a real one). The steps are listed in
``steps.py``; docs/demo.md describes them.

Files:

- ``command``: ``sluiceway demo``; ``keep``: ``--keep-running``, one stack left up for the
  user's own requests;
- ``stack``: the whole system in one process (simulator, router, coordinator, processor on
  loopback), from the YAML documents beside it (the guide's values, router, coordinator and
  objectives files); ``context``: what every step gets (clock, broker, findings);
- ``steps``: the steps in the order they run; the scenarios: ``steps_quota`` (A and B: quotas
  and lanes), ``steps_gates`` (C and D: the pool gate reads the router's saturation),
  ``steps_router`` (E, F and G: the router's flow control), ``steps_isolation`` (H: realtime
  isolation, short);
- ``traffic``: the demo's clients, sending as the guide's clients do; ``observe``: what the
  model server sees, every start and end of a running request with its lane;
- ``findings``: the checks and measurements the steps report; ``tables``: the tables, for the
  terminal and the HTML report; ``report``: the report directory (``index.html``);
  ``plots``: its pictures, drawn with matplotlib (the ``demo`` extra).
"""
