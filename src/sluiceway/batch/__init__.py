"""The OpenAI Batch API over the coordinator's queues (docs/batch.md).

A batch is many batch-tier requests of its tenant: each line of its input file is queued like
a queued request of the coordinator, and its result is collected into the batch's output or
error file, each line exactly once.

Pure (standard library, ``wire``): ``lines.py``, one input line checked (errors name the
line); ``status.py``, the status machine, request counts and the OpenAI ``batch`` object;
``output.py``, the output and error file lines in OpenAI's shape; ``multipart.py``, a streaming
``multipart/form-data`` reader; ``grouping.py``, lines sharing a system prompt queued to run
together; ``base.py``, the store protocols (``JobStore``,
``FileStore``).

Stores: ``memory_jobs.py``, ``sqlite_jobs.py``, ``redis_jobs.py`` and ``postgres_jobs.py`` (job
state in the broker's database), ``local_files.py`` and ``s3_files.py`` (file bytes in a
directory or an S3-compatible store), chosen by ``stores.py``.

Running: ``service.py`` (the API's operations, resuming and leasing batches) starts one
``runner.py`` per batch (queue lines in chunks, collect, cancel, expire); ``collector.py``
writes result lines idempotently; ``withdraw.py`` takes still-queued lines out of their queue;
``metrics.py``: batches by status, lines by outcome, time to a final status.
"""
