"""``sluiceway demo``: the guide's scenarios, in one process, on the simulator.

No external service is needed (docs/design-rules.md rule 24): the memory broker stands in for Redis
and the simulator for vLLM. The processor is configured from the guide's own values file.
"""
