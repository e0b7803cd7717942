"""The async processor: ingest (queue -> gates -> lanes), workers (dispatch, retry, result),
producer client and app wiring. Pure parts: ``lanes``, ``retry``, ``outcome``, ``headers``."""
