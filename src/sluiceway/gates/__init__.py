"""Gates: admission decisions at queue and pool level (protocol in ``base``, stores in
``quota_store``, gate types registered by name in ``registry``)."""
