"""``sluiceway demo``: the whole system in one process, with the guide's scenarios checked.

No external service is needed (docs/design-rules.md rule 24): the simulator stands in for vLLM
and the memory broker for Redis (``--redis`` uses a real one). The steps are listed in
``steps.py``; docs/demo.md describes them.
"""
