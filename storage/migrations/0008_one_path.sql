-- Heed schema version 8.
--
-- One durable path. A job's part file is named in its row before the file exists, so every part in
-- the folder is one the database records; a done job keeps its part name until the part has taken
-- its final name. The lists of parts to name and jobs a crash cut off, the database's identity and
-- the start log's bookmark are gone with the mechanisms that needed them.
--
-- The jobs table is rebuilt: a job's de-duplication key is a column of its own (J2, W3: the URL is
-- fetched as written), the name the server gave the file is kept for a resume, and a crawled URL may
-- be skipped (W6). Each host's job counts live in its hosts row, changed in the same transaction as
-- every transition (Q1: the window and heed hosts never count jobs): by the trigger below when a
-- job's state changes, and by the statement that adds jobs, once per host.

CREATE TABLE jobs_new (
    id            INTEGER PRIMARY KEY,
    url           TEXT    NOT NULL,
    key           TEXT    NOT NULL,
    host          TEXT    NOT NULL,
    state         TEXT    NOT NULL CHECK (state IN ('queued', 'active', 'paused', 'done', 'failed', 'cancelled', 'skipped')),
    not_before    INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    file          TEXT    NOT NULL DEFAULT '',
    name          TEXT    NOT NULL DEFAULT '',
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

INSERT INTO jobs_new (id, url, key, host, state, not_before, created_at, updated_at, file, part, etag,
    last_modified, size, bytes, sha256, attempts, throttled, last_error, last_status)
SELECT id, url, url, host, state, not_before, created_at, updated_at, file,
    CASE WHEN state = 'done' THEN coalesce((SELECT n.part FROM naming n WHERE n.job_id = jobs.id), '') ELSE part END,
    etag, last_modified, size, bytes, sha256, attempts, throttled, last_error, last_status
FROM jobs;

DROP TABLE jobs;
ALTER TABLE jobs_new RENAME TO jobs;
DROP TABLE naming;
DROP TABLE interrupted;
DELETE FROM settings WHERE key IN ('identity', 'run_folder', 'starts_applied');

-- A part name is one job's: where an earlier Heed left two jobs with one part name (a part deleted
-- by hand, another download folder), the newest keeps it and the others start over.
UPDATE jobs SET part = '', bytes = 0, etag = '', last_modified = '', size = -1
WHERE part <> '' AND id NOT IN (SELECT max(id) FROM jobs WHERE part <> '' GROUP BY part);

-- J2, W3: a URL is one job.
CREATE UNIQUE INDEX jobs_key ON jobs (key);
-- A part name is one job's.
CREATE UNIQUE INDEX jobs_part ON jobs (part) WHERE part <> '';
-- Q1: a host's next queued jobs, in queue order (Store.NextJobs).
CREATE INDEX jobs_queue ON jobs (host, not_before, id) WHERE state = 'queued';
-- Jobs by state (the jobs view, recovery of active jobs), and by host.
CREATE INDEX jobs_state ON jobs (state, id);
CREATE INDEX jobs_host ON jobs (host, id);

-- History numbers throttled tries apart from attempts (R3).
ALTER TABLE attempts ADD COLUMN throttled INTEGER NOT NULL DEFAULT 0;

ALTER TABLE hosts ADD COLUMN queued    INTEGER NOT NULL DEFAULT 0;
ALTER TABLE hosts ADD COLUMN active    INTEGER NOT NULL DEFAULT 0;
ALTER TABLE hosts ADD COLUMN paused_jobs INTEGER NOT NULL DEFAULT 0;
ALTER TABLE hosts ADD COLUMN done      INTEGER NOT NULL DEFAULT 0;
ALTER TABLE hosts ADD COLUMN failed    INTEGER NOT NULL DEFAULT 0;
ALTER TABLE hosts ADD COLUMN cancelled INTEGER NOT NULL DEFAULT 0;
ALTER TABLE hosts ADD COLUMN skipped   INTEGER NOT NULL DEFAULT 0;

INSERT OR IGNORE INTO hosts (host) SELECT DISTINCT host FROM jobs;
UPDATE hosts SET
    queued      = (SELECT count(*) FROM jobs j WHERE j.host = hosts.host AND j.state = 'queued'),
    active      = (SELECT count(*) FROM jobs j WHERE j.host = hosts.host AND j.state = 'active'),
    paused_jobs = (SELECT count(*) FROM jobs j WHERE j.host = hosts.host AND j.state = 'paused'),
    done        = (SELECT count(*) FROM jobs j WHERE j.host = hosts.host AND j.state = 'done'),
    failed      = (SELECT count(*) FROM jobs j WHERE j.host = hosts.host AND j.state = 'failed'),
    cancelled   = (SELECT count(*) FROM jobs j WHERE j.host = hosts.host AND j.state = 'cancelled'),
    skipped     = (SELECT count(*) FROM jobs j WHERE j.host = hosts.host AND j.state = 'skipped');

CREATE TRIGGER jobs_recounted AFTER UPDATE OF state ON jobs WHEN old.state <> new.state BEGIN
    UPDATE hosts SET
        queued      = queued      + (new.state = 'queued')    - (old.state = 'queued'),
        active      = active      + (new.state = 'active')    - (old.state = 'active'),
        paused_jobs = paused_jobs + (new.state = 'paused')    - (old.state = 'paused'),
        done        = done        + (new.state = 'done')      - (old.state = 'done'),
        failed      = failed      + (new.state = 'failed')    - (old.state = 'failed'),
        cancelled   = cancelled   + (new.state = 'cancelled') - (old.state = 'cancelled'),
        skipped     = skipped     + (new.state = 'skipped')   - (old.state = 'skipped')
    WHERE host = new.host;
END;
