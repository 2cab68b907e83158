-- Heed schema version 1.
--
-- Times are unix nanoseconds of the wall clock (0 = none). Sizes are bytes; size -1 = unknown.
-- J2: one row per URL (UNIQUE url). A URL that is queued, active or paused is reported as a
-- duplicate; a done, failed or cancelled URL is queued again only by Requeue, which reuses its row.

-- "HEED": Open refuses SQLite files of other applications.
PRAGMA application_id = 1212499268;

CREATE TABLE jobs (
    id            INTEGER PRIMARY KEY,
    url           TEXT    NOT NULL,
    host          TEXT    NOT NULL,
    state         TEXT    NOT NULL CHECK (state IN ('queued', 'active', 'paused', 'done', 'failed', 'cancelled')),
    not_before    INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    file          TEXT    NOT NULL DEFAULT '',
    part          TEXT    NOT NULL DEFAULT '',
    etag          TEXT    NOT NULL DEFAULT '',
    last_modified TEXT    NOT NULL DEFAULT '',
    size          INTEGER NOT NULL DEFAULT -1,
    bytes         INTEGER NOT NULL DEFAULT 0,
    sha256        TEXT    NOT NULL DEFAULT '',
    attempts      INTEGER NOT NULL DEFAULT 0,
    throttled     INTEGER NOT NULL DEFAULT 0,
    last_error    TEXT    NOT NULL DEFAULT '',
    last_status   INTEGER NOT NULL DEFAULT 0
) STRICT;

-- J2: a URL is stored once.
CREATE UNIQUE INDEX jobs_url ON jobs (url);
-- Next due jobs per host, loading all queued jobs by host and not_before, counts by state and
-- by host and state (GROUP BY state, host walks it in order), jobs of one host (state IN (all)
-- AND host = ?: six seeks). Every index costs Enqueue about a microsecond per URL, so there is
-- no separate (host, state) index.
CREATE INDEX jobs_state_host_due ON jobs (state, host, not_before);
-- Next due jobs over all hosts.
CREATE INDEX jobs_due ON jobs (not_before) WHERE state = 'queued';

-- S3: every attempt (one HTTP exchange) of every job.
CREATE TABLE attempts (
    id             INTEGER PRIMARY KEY,
    job_id         INTEGER NOT NULL REFERENCES jobs (id),
    url            TEXT    NOT NULL,
    host           TEXT    NOT NULL,
    attempt        INTEGER NOT NULL,
    started_at     INTEGER NOT NULL,
    duration_ns    INTEGER NOT NULL DEFAULT 0,
    status         INTEGER NOT NULL DEFAULT 0,
    outcome        TEXT    NOT NULL,
    bytes          INTEGER NOT NULL DEFAULT 0,
    error          TEXT    NOT NULL DEFAULT '',
    retry_after_ms INTEGER NOT NULL DEFAULT 0,
    backoff_level  INTEGER NOT NULL DEFAULT 0,
    breaker_state  TEXT    NOT NULL DEFAULT ''
) STRICT;

-- History of host H, newest first.
CREATE INDEX attempts_host ON attempts (host, id);
-- History of one job.
CREATE INDEX attempts_job ON attempts (job_id, id);
-- History filtered by outcome, newest first.
CREATE INDEX attempts_outcome ON attempts (outcome, id);

-- S4: per-host politeness state. tunables_json is owned by the engine; NULL = follows defaults.
CREATE TABLE hosts (
    host          TEXT    PRIMARY KEY,
    tunables_json TEXT    CHECK (tunables_json IS NULL OR json_valid(tunables_json)),
    paused        INTEGER NOT NULL DEFAULT 0,
    pause_reason  TEXT    NOT NULL DEFAULT '',
    level         INTEGER NOT NULL DEFAULT 0,
    streak        INTEGER NOT NULL DEFAULT 0,
    gate          INTEGER NOT NULL DEFAULT 0,
    breaker_state INTEGER NOT NULL DEFAULT 0,
    failures      INTEGER NOT NULL DEFAULT 0,
    opened_at     INTEGER NOT NULL DEFAULT 0,
    last_status   INTEGER NOT NULL DEFAULT 0,
    throttles     INTEGER NOT NULL DEFAULT 0,
    updated_at    INTEGER NOT NULL DEFAULT 0
) STRICT;

-- S4: per-host event timeline (throttles, breaker transitions, decays, user actions).
CREATE TABLE host_events (
    id     INTEGER PRIMARY KEY,
    host   TEXT    NOT NULL,
    at     INTEGER NOT NULL,
    kind   TEXT    NOT NULL,
    detail TEXT    NOT NULL DEFAULT ''
) STRICT;

CREATE INDEX host_events_host ON host_events (host, id);

-- Defaults JSON, download folder, UI preferences.
CREATE TABLE settings (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;
