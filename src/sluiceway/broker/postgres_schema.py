"""Every table, function and statement of the PostgreSQL broker and quota store, in one place.

The schema lives in its own PostgreSQL schema (``sluiceway``), so it can share a database with
an application. Each multi-step operation is one PL/pgSQL function: one statement, one round
trip and one implicit transaction, the way the Redis broker runs one Lua script. Functions read
wall time (marker and result expiries) from the database clock, so processors on several hosts
agree; instants of the queue protocol (scores, leases, due times) come from the caller.

Migrations are numbered; :data:`MIGRATIONS` ``[n - 1]`` takes a database from version ``n - 1``
to ``n``. They run under a transaction-scoped advisory lock, so processors starting together
migrate once.

Notifications: a commit that makes an entry pending sends ``NOTIFY sluiceway_work, '<queue>'``;
a result push sends ``sluiceway_results, '<destination>'``; a parked retry sends
``sluiceway_retry``; a cancellation sends ``sluiceway_cancel, '<id>'``. They are wake-ups and
cache invalidations only: a lost one costs a poll, never an entry.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "CANCEL_CHANNEL",
    "MIGRATIONS",
    "MIGRATION_LOCK",
    "RESULT_CHANNEL",
    "RETRY_CHANNEL",
    "SCHEMA",
    "SQL",
    "WORK_CHANNEL",
]

SCHEMA: Final = "sluiceway"
WORK_CHANNEL: Final = "sluiceway_work"
RESULT_CHANNEL: Final = "sluiceway_results"
RETRY_CHANNEL: Final = "sluiceway_retry"
CANCEL_CHANNEL: Final = "sluiceway_cancel"
# Key of the advisory lock migrations hold (any fixed bigint; this one spells "slcw").
MIGRATION_LOCK: Final = 0x736C6377

# Claim keys are bytea: they hold the NUL that separates request id and token.
_TABLES = """
CREATE SCHEMA IF NOT EXISTS sluiceway;
CREATE TABLE IF NOT EXISTS sluiceway.schema_version (version integer NOT NULL);
CREATE TABLE sluiceway.pending (
  queue text NOT NULL, member text NOT NULL, score double precision NOT NULL);
CREATE UNIQUE INDEX pending_member ON sluiceway.pending (queue, md5(member));
CREATE INDEX pending_order ON sluiceway.pending (queue, score);
CREATE TABLE sluiceway.claims (
  queue text NOT NULL, key bytea NOT NULL, member text NOT NULL, score double precision NOT NULL,
  owner text NOT NULL, lease_until double precision NOT NULL, PRIMARY KEY (queue, key));
CREATE INDEX claims_lease ON sluiceway.claims (queue, lease_until);
CREATE TABLE sluiceway.retries (member text NOT NULL, due double precision NOT NULL);
CREATE UNIQUE INDEX retries_member ON sluiceway.retries (md5(member));
CREATE INDEX retries_due ON sluiceway.retries (due);
CREATE TABLE sluiceway.results (
  seq bigserial PRIMARY KEY, destination text NOT NULL, record text NOT NULL);
CREATE INDEX results_destination ON sluiceway.results (destination, seq);
CREATE TABLE sluiceway.result_expiry (
  destination text PRIMARY KEY, expires_at double precision NOT NULL);
CREATE TABLE sluiceway.markers (
  kind text NOT NULL, request_id text NOT NULL, token text NOT NULL,
  expires_at double precision, PRIMARY KEY (kind, request_id));
CREATE TABLE sluiceway.invalid (
  seq bigserial PRIMARY KEY, queue text NOT NULL, member text NOT NULL);
CREATE TABLE sluiceway.quota_count (key text PRIMARY KEY, count bigint NOT NULL);
CREATE TABLE sluiceway.quota_holders (
  key text NOT NULL, holder text NOT NULL, lease_until double precision NOT NULL,
  PRIMARY KEY (key, holder));
CREATE INDEX quota_holders_lease ON sluiceway.quota_holders (lease_until);
CREATE TABLE sluiceway.quota_rate (
  key text NOT NULL, member text NOT NULL, at double precision NOT NULL,
  PRIMARY KEY (key, member));
CREATE INDEX quota_rate_at ON sluiceway.quota_rate (key, at);
"""

_HELPERS = """
CREATE FUNCTION sluiceway.wall_now() RETURNS double precision LANGUAGE sql AS
$$ SELECT extract(epoch FROM clock_timestamp())::double precision $$;

CREATE FUNCTION sluiceway.put_pending(p_queue text, p_member text, p_score double precision)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO sluiceway.pending AS p VALUES (p_queue, p_member, p_score)
  ON CONFLICT (queue, md5(member)) DO UPDATE SET score = excluded.score;
  PERFORM pg_notify('sluiceway_work', p_queue);
END $$;

CREATE FUNCTION sluiceway.marker(p_kind text, p_id text) RETURNS text LANGUAGE sql AS $$
  SELECT token FROM sluiceway.markers
  WHERE kind = p_kind AND request_id = p_id
    AND (expires_at IS NULL OR expires_at > sluiceway.wall_now())
$$;

CREATE FUNCTION sluiceway.retry_origin(p_member text, OUT queue text, OUT score double precision)
LANGUAGE plpgsql AS $$
DECLARE doc jsonb;
BEGIN
  doc := p_member::jsonb;
  queue := doc -> 'internal' ->> 'request_queue_name';
  score := (doc -> 'data' ->> 'deadline')::double precision;
  IF queue = '' THEN queue := NULL; END IF;
  IF queue IS NULL OR score IS NULL THEN queue := NULL; score := NULL; END IF;
EXCEPTION WHEN others THEN queue := NULL; score := NULL;
END $$;

CREATE FUNCTION sluiceway.expire_results(p_destination text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM sluiceway.result_expiry
             WHERE destination = p_destination AND expires_at <= sluiceway.wall_now()) THEN
    DELETE FROM sluiceway.results WHERE destination = p_destination;
    DELETE FROM sluiceway.result_expiry WHERE destination = p_destination;
  END IF;
END $$;
"""

_OPERATIONS = """
CREATE FUNCTION sluiceway.claim_many(
  p_queue text[], p_member text[], p_key bytea[], p_owner text[],
  p_lease double precision[], p_id text[], p_token text[])
RETURNS TABLE (won boolean, cancelled boolean) LANGUAGE plpgsql AS $$
DECLARE i integer; v_score double precision;
BEGIN
  FOR i IN 1 .. coalesce(array_length(p_member, 1), 0) LOOP
    v_score := NULL;
    IF NOT EXISTS (SELECT 1 FROM sluiceway.claims c
                   WHERE c.queue = p_queue[i] AND c.key = p_key[i]) THEN
      DELETE FROM sluiceway.pending p WHERE p.ctid = (
        SELECT q.ctid FROM sluiceway.pending q
        WHERE q.queue = p_queue[i] AND md5(q.member) = md5(p_member[i])
        FOR UPDATE SKIP LOCKED)
      RETURNING p.score INTO v_score;
    END IF;
    IF v_score IS NULL THEN
      won := false; cancelled := false; RETURN NEXT; CONTINUE;
    END IF;
    INSERT INTO sluiceway.claims VALUES
      (p_queue[i], p_key[i], p_member[i], v_score, p_owner[i], p_lease[i])
    ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN  -- another member of this generation won meanwhile: put ours back
      INSERT INTO sluiceway.pending VALUES (p_queue[i], p_member[i], v_score);
      won := false; cancelled := false; RETURN NEXT; CONTINUE;
    END IF;
    won := true;
    cancelled := sluiceway.marker('cancel', p_id[i]) IS NOT DISTINCT FROM p_token[i];
    RETURN NEXT;
  END LOOP;
END $$;

CREATE FUNCTION sluiceway.renew(
  p_queue text, p_key bytea, p_owner text, p_lease double precision)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE v_owner text;
BEGIN
  SELECT owner INTO v_owner FROM sluiceway.claims
  WHERE queue = p_queue AND key = p_key FOR UPDATE;
  IF v_owner IS NULL THEN RETURN 'missing'; END IF;
  IF v_owner <> p_owner THEN RETURN 'stolen'; END IF;
  UPDATE sluiceway.claims SET lease_until = p_lease WHERE queue = p_queue AND key = p_key;
  RETURN 'renewed';
END $$;

CREATE FUNCTION sluiceway.ack(
  p_queue text, p_key bytea, p_owner text, p_destination text, p_record text,
  p_expire_after double precision, p_id text, p_token text)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM sluiceway.claims WHERE queue = p_queue AND key = p_key AND owner = p_owner;
  IF NOT FOUND THEN RETURN false; END IF;
  PERFORM sluiceway.expire_results(p_destination);
  INSERT INTO sluiceway.results (destination, record) VALUES (p_destination, p_record);
  IF p_expire_after IS NOT NULL AND p_expire_after > 0 THEN
    INSERT INTO sluiceway.result_expiry VALUES
      (p_destination, sluiceway.wall_now() + p_expire_after)
    ON CONFLICT (destination) DO UPDATE SET expires_at = excluded.expires_at;
  END IF;
  DELETE FROM sluiceway.markers WHERE request_id = p_id AND token = p_token;
  PERFORM pg_notify('sluiceway_results', p_destination);
  RETURN true;
END $$;

-- The acks of one event-loop turn, each its own fenced step, sent as one statement.
CREATE FUNCTION sluiceway.ack_many(
  p_queue text[], p_key bytea[], p_owner text[], p_destination text[], p_record text[],
  p_expire_after double precision[], p_id text[], p_token text[])
RETURNS TABLE (done boolean) LANGUAGE plpgsql AS $$
DECLARE i integer;
BEGIN
  FOR i IN 1 .. coalesce(array_length(p_key, 1), 0) LOOP
    done := sluiceway.ack(p_queue[i], p_key[i], p_owner[i], p_destination[i], p_record[i],
                          p_expire_after[i], p_id[i], p_token[i]);
    RETURN NEXT;
  END LOOP;
END $$;

CREATE FUNCTION sluiceway.release(p_queue text, p_key bytea, p_owner text)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE v_member text; v_score double precision;
BEGIN
  DELETE FROM sluiceway.claims WHERE queue = p_queue AND key = p_key AND owner = p_owner
  RETURNING member, score INTO v_member, v_score;
  IF NOT FOUND THEN RETURN false; END IF;
  PERFORM sluiceway.put_pending(p_queue, v_member, v_score);
  RETURN true;
END $$;

CREATE FUNCTION sluiceway.retry_after(
  p_queue text, p_key bytea, p_owner text, p_member text, p_due double precision)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM sluiceway.claims WHERE queue = p_queue AND key = p_key AND owner = p_owner;
  IF NOT FOUND THEN RETURN false; END IF;
  INSERT INTO sluiceway.retries VALUES (p_member, p_due)
  ON CONFLICT (md5(member)) DO UPDATE SET due = excluded.due;
  PERFORM pg_notify('sluiceway_retry', '');
  RETURN true;
END $$;

CREATE FUNCTION sluiceway.move_due_retries(
  p_now double precision, p_limit integer, p_fallback text)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE r record; o record; n integer := 0;
BEGIN
  FOR r IN DELETE FROM sluiceway.retries t WHERE t.ctid IN (
      SELECT ctid FROM sluiceway.retries WHERE due <= p_now ORDER BY due, member
      LIMIT p_limit FOR UPDATE SKIP LOCKED)
    RETURNING t.member LOOP
    o := sluiceway.retry_origin(r.member);
    PERFORM sluiceway.put_pending(
      coalesce(o.queue, p_fallback), r.member, coalesce(o.score, p_now));
    n := n + 1;
  END LOOP;
  RETURN n;
END $$;

CREATE FUNCTION sluiceway.reclaim_expired(
  p_queue text, p_now double precision, p_limit integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE r record; n integer := 0;
BEGIN
  FOR r IN DELETE FROM sluiceway.claims c WHERE c.ctid IN (
      SELECT ctid FROM sluiceway.claims WHERE queue = p_queue AND lease_until < p_now
      ORDER BY lease_until LIMIT p_limit FOR UPDATE SKIP LOCKED)
    RETURNING c.member, c.score LOOP
    PERFORM sluiceway.put_pending(p_queue, r.member, r.score);
    n := n + 1;
  END LOOP;
  RETURN n;
END $$;

CREATE FUNCTION sluiceway.quarantine(p_queue text, p_member text)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM sluiceway.pending WHERE queue = p_queue AND md5(member) = md5(p_member);
  IF NOT FOUND THEN RETURN false; END IF;
  INSERT INTO sluiceway.invalid (queue, member) VALUES (p_queue, p_member);
  RETURN true;
END $$;

CREATE FUNCTION sluiceway.enqueue(
  p_queue text, p_member text[], p_score double precision[],
  p_id text[], p_token text[], p_expire_after double precision[])
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE i integer; n integer := 0; v_new boolean;
BEGIN
  FOR i IN 1 .. coalesce(array_length(p_id, 1), 0) LOOP
    DELETE FROM sluiceway.markers WHERE kind = 'cancel' AND request_id = p_id[i];
    INSERT INTO sluiceway.markers VALUES ('active', p_id[i], p_token[i],
      CASE WHEN p_expire_after[i] > 0 THEN sluiceway.wall_now() + p_expire_after[i] END)
    ON CONFLICT (kind, request_id) DO UPDATE
      SET token = excluded.token, expires_at = excluded.expires_at;
  END LOOP;
  FOR i IN 1 .. coalesce(array_length(p_member, 1), 0) LOOP
    INSERT INTO sluiceway.pending AS p VALUES (p_queue, p_member[i], p_score[i])
    ON CONFLICT (queue, md5(member)) DO UPDATE SET score = excluded.score
    RETURNING (xmax = 0) INTO v_new;
    IF v_new THEN n := n + 1; END IF;
  END LOOP;
  PERFORM pg_notify('sluiceway_work', p_queue);
  RETURN n;
END $$;

CREATE FUNCTION sluiceway.cancel(p_id text, p_expire_after double precision)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE v_token text;
BEGIN
  v_token := sluiceway.marker('active', p_id);
  IF v_token IS NULL THEN RETURN false; END IF;
  INSERT INTO sluiceway.markers VALUES
    ('cancel', p_id, v_token, sluiceway.wall_now() + p_expire_after)
  ON CONFLICT (kind, request_id) DO UPDATE
    SET token = excluded.token, expires_at = excluded.expires_at;
  PERFORM pg_notify('sluiceway_cancel', p_id);
  RETURN true;
END $$;

CREATE FUNCTION sluiceway.pop_result(p_destination text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE v_record text;
BEGIN
  PERFORM sluiceway.expire_results(p_destination);
  DELETE FROM sluiceway.results r WHERE r.seq = (
    SELECT seq FROM sluiceway.results WHERE destination = p_destination
    ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
  RETURNING r.record INTO v_record;
  RETURN v_record;
END $$;

CREATE FUNCTION sluiceway.result_count(p_destination text) RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
  PERFORM sluiceway.expire_results(p_destination);
  RETURN (SELECT count(*) FROM sluiceway.results WHERE destination = p_destination);
END $$;
"""

_QUOTA = """
CREATE FUNCTION sluiceway.quota_add(p_key text, p_delta bigint) RETURNS void LANGUAGE sql AS $$
  INSERT INTO sluiceway.quota_count VALUES (p_key, greatest(0, p_delta))
  ON CONFLICT (key) DO UPDATE
    SET count = greatest(0, sluiceway.quota_count.count + p_delta)
$$;

CREATE FUNCTION sluiceway.quota_reap(p_key text, p_now double precision)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE n integer;
BEGIN
  DELETE FROM sluiceway.quota_holders WHERE key = p_key AND lease_until < p_now;
  GET DIAGNOSTICS n = ROW_COUNT;
  IF n > 0 THEN PERFORM sluiceway.quota_add(p_key, -n); END IF;
  RETURN n;
END $$;

CREATE FUNCTION sluiceway.quota_reap_all(p_now double precision)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE k text; n integer := 0;
BEGIN
  FOR k IN SELECT DISTINCT key FROM sluiceway.quota_holders WHERE lease_until < p_now LOOP
    n := n + sluiceway.quota_reap(k, p_now);
  END LOOP;
  RETURN n;
END $$;

CREATE FUNCTION sluiceway.quota_acquire(
  p_key text, p_holder text, p_limit integer, p_lease double precision, p_now double precision)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  -- The count row is the per-key lock: acquirers of one key run one at a time.
  INSERT INTO sluiceway.quota_count VALUES (p_key, 0) ON CONFLICT (key) DO NOTHING;
  PERFORM 1 FROM sluiceway.quota_count WHERE key = p_key FOR UPDATE;
  PERFORM sluiceway.quota_reap(p_key, p_now);
  UPDATE sluiceway.quota_holders SET lease_until = greatest(lease_until, p_lease)
  WHERE key = p_key AND holder = p_holder;
  IF FOUND THEN RETURN true; END IF;
  IF (SELECT count FROM sluiceway.quota_count WHERE key = p_key) >= p_limit THEN
    RETURN false;
  END IF;
  INSERT INTO sluiceway.quota_holders VALUES (p_key, p_holder, p_lease);
  PERFORM sluiceway.quota_add(p_key, 1);
  RETURN true;
END $$;

CREATE FUNCTION sluiceway.quota_release(p_key text, p_holder text)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM sluiceway.quota_holders WHERE key = p_key AND holder = p_holder;
  IF NOT FOUND THEN RETURN false; END IF;
  PERFORM sluiceway.quota_add(p_key, -1);
  RETURN true;
END $$;

CREATE FUNCTION sluiceway.admit_rate(
  p_key text, p_member text, p_limit integer, p_window double precision,
  p_now double precision)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext('sluiceway.rate:' || p_key));
  DELETE FROM sluiceway.quota_rate WHERE key = p_key AND at <= p_now - p_window;
  IF (SELECT count(*) FROM sluiceway.quota_rate WHERE key = p_key) >= p_limit THEN
    RETURN false;
  END IF;
  INSERT INTO sluiceway.quota_rate VALUES (p_key, p_member, p_now)
  ON CONFLICT (key, member) DO UPDATE SET at = excluded.at;
  RETURN true;
END $$;
"""

# 2: result mailboxes for the coordinator (read without consuming, shorten a life, withdraw a
# cancellation when a client re-attaches), and why each invalid entry was moved aside.
_MAILBOXES = """
CREATE TABLE sluiceway.invalid_info (
  queue text NOT NULL, digest text NOT NULL, info text NOT NULL, PRIMARY KEY (queue, digest));

CREATE FUNCTION sluiceway.peek_result(p_destination text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  PERFORM sluiceway.expire_results(p_destination);
  RETURN (SELECT record FROM sluiceway.results WHERE destination = p_destination
          ORDER BY seq LIMIT 1);
END $$;

CREATE FUNCTION sluiceway.expire_result(p_destination text, p_after double precision)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
  IF p_after <= 0 THEN
    DELETE FROM sluiceway.results WHERE destination = p_destination;
    DELETE FROM sluiceway.result_expiry WHERE destination = p_destination;
  ELSIF EXISTS (SELECT 1 FROM sluiceway.results WHERE destination = p_destination) THEN
    INSERT INTO sluiceway.result_expiry VALUES (p_destination, sluiceway.wall_now() + p_after)
    ON CONFLICT (destination) DO UPDATE SET expires_at = excluded.expires_at;
  END IF;
END $$;

CREATE FUNCTION sluiceway.revive(p_id text) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE v_token text;
BEGIN
  v_token := sluiceway.marker('active', p_id);
  IF v_token IS NULL OR sluiceway.marker('cancel', p_id) IS DISTINCT FROM v_token THEN
    RETURN false;
  END IF;
  DELETE FROM sluiceway.markers WHERE kind = 'cancel' AND request_id = p_id;
  PERFORM pg_notify('sluiceway_cancel', p_id);
  RETURN true;
END $$;
"""

MIGRATIONS: Final[tuple[str, ...]] = (_TABLES + _HELPERS + _OPERATIONS + _QUOTA, _MAILBOXES)


class SQL:
    """The statements the Python side sends (each one round trip)."""

    VERSION = "SELECT coalesce(max(version), 0) FROM sluiceway.schema_version"
    HAS_VERSION_TABLE = "SELECT to_regclass('sluiceway.schema_version') IS NOT NULL"
    SET_VERSION = "DELETE FROM sluiceway.schema_version; INSERT INTO sluiceway.schema_version "
    LOCK = "SELECT pg_advisory_xact_lock($1)"

    PEEK = (
        "SELECT member, score FROM sluiceway.pending WHERE queue = $1 "
        "ORDER BY {order} LIMIT $2 OFFSET $3"  # PeekOrder.sql
    )
    CLAIM_MANY = "SELECT won, cancelled FROM sluiceway.claim_many($1, $2, $3, $4, $5, $6, $7)"
    RENEW = "SELECT sluiceway.renew($1, $2, $3, $4)"
    ACK_MANY = "SELECT done FROM sluiceway.ack_many($1, $2, $3, $4, $5, $6, $7, $8)"
    RELEASE = "SELECT sluiceway.release($1, $2, $3)"
    RETRY_AFTER = "SELECT sluiceway.retry_after($1, $2, $3, $4, $5)"
    MOVE_DUE_RETRIES = "SELECT sluiceway.move_due_retries($1, $2, $3)"
    NEXT_RETRY_DUE = "SELECT min(due) FROM sluiceway.retries"
    RECLAIM_EXPIRED = "SELECT sluiceway.reclaim_expired($1, $2, $3)"
    QUARANTINE = "SELECT sluiceway.quarantine($1, $2)"
    INVALID = "SELECT member FROM sluiceway.invalid WHERE queue = $1 ORDER BY seq"
    BACKLOG = "SELECT count(*) FROM sluiceway.pending WHERE queue = $1"
    COUNT_DUE = (
        "SELECT (SELECT count(*) FROM sluiceway.pending WHERE queue = $1 AND score <= l) "
        "FROM unnest($2::double precision[]) WITH ORDINALITY AS t(l, i) ORDER BY i"
    )
    IS_CANCELLED = "SELECT sluiceway.marker('cancel', $1) IS NOT DISTINCT FROM $2"
    ENQUEUE = "SELECT sluiceway.enqueue($1, $2, $3, $4, $5, $6)"
    CANCEL = "SELECT sluiceway.cancel($1, $2)"
    POP_RESULT = "SELECT sluiceway.pop_result($1)"
    RESULT_COUNT = "SELECT sluiceway.result_count($1)"
    PEEK_RESULT = "SELECT sluiceway.peek_result($1)"
    EXPIRE_RESULT = "SELECT sluiceway.expire_result($1, $2)"
    IS_PENDING = "SELECT sluiceway.marker('active', $1) IS NOT NULL"
    REVIVE = "SELECT sluiceway.revive($1)"
    INVALID_INFO = (
        "INSERT INTO sluiceway.invalid_info VALUES ($1, $2, $3) "
        "ON CONFLICT (queue, digest) DO UPDATE SET info = excluded.info"
    )
    INVALID_REASONS = "SELECT digest, info FROM sluiceway.invalid_info WHERE queue = $1"
    QUEUE_COUNTS = (
        "SELECT (SELECT count(*) FROM sluiceway.pending WHERE queue = $1), "
        "(SELECT count(*) FROM sluiceway.claims WHERE queue = $1), "
        "(SELECT count(*) FROM sluiceway.invalid WHERE queue = $1), "
        "(SELECT min(score) FROM sluiceway.pending WHERE queue = $1)"
    )
    RETRY_MEMBERS = "SELECT member FROM sluiceway.retries"
    EXPIRE_RESULTS = "SELECT sluiceway.expire_results($1)"
    PEEK_RESULTS = (
        "SELECT record FROM sluiceway.results WHERE destination = $1 ORDER BY seq LIMIT $2"
    )
    REMOVE_RESULT = (
        "DELETE FROM sluiceway.results WHERE seq = (SELECT seq FROM sluiceway.results "
        "WHERE destination = $1 AND record = $2 ORDER BY seq LIMIT 1) RETURNING seq"
    )
    PING = "SELECT 1"

    QUOTA_ACQUIRE = "SELECT sluiceway.quota_acquire($1, $2, $3, $4, $5)"
    QUOTA_RENEW = (
        "UPDATE sluiceway.quota_holders SET lease_until = greatest(lease_until, $3) "
        "WHERE key = $1 AND holder = $2"
    )
    QUOTA_RELEASE = "SELECT sluiceway.quota_release($1, $2)"
    QUOTA_COUNT = "SELECT coalesce((SELECT count FROM sluiceway.quota_count WHERE key = $1), 0)"
    QUOTA_REAP = "SELECT sluiceway.quota_reap($1, $2)"
    QUOTA_REAP_ALL = "SELECT sluiceway.quota_reap_all($1)"
    ADMIT_RATE = "SELECT sluiceway.admit_rate($1, $2, $3, $4, $5)"
