-- A host's job counts move out of its hosts row into a row of their own. The hosts row holds the
-- host's politeness state, written a few times a second while the host runs, and its lease; each
-- job's start and finish, counted by jobs_recount in the same row, waited for those writes (and
-- they for it), so that workers spent most of their time waiting for row locks.
CREATE TABLE host_counts (
    host        TEXT   PRIMARY KEY,
    queued      BIGINT NOT NULL DEFAULT 0,
    active      BIGINT NOT NULL DEFAULT 0,
    paused_jobs BIGINT NOT NULL DEFAULT 0,
    done        BIGINT NOT NULL DEFAULT 0,
    failed      BIGINT NOT NULL DEFAULT 0,
    cancelled   BIGINT NOT NULL DEFAULT 0,
    skipped     BIGINT NOT NULL DEFAULT 0
);
INSERT INTO host_counts SELECT host, queued, active, paused_jobs, done, failed, cancelled, skipped FROM hosts;
-- Hosts with work (queued, or left active by a dead owner): what Claim looks for.
CREATE INDEX host_counts_work ON host_counts (host) WHERE queued > 0 OR active > 0;

DROP INDEX hosts_claimable;
ALTER TABLE hosts DROP COLUMN queued, DROP COLUMN active, DROP COLUMN paused_jobs, DROP COLUMN done,
    DROP COLUMN failed, DROP COLUMN cancelled, DROP COLUMN skipped;

CREATE OR REPLACE FUNCTION jobs_recount() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE host_counts SET
        queued      = queued      + (NEW.state = 'queued')::int    - (OLD.state = 'queued')::int,
        active      = active      + (NEW.state = 'active')::int    - (OLD.state = 'active')::int,
        paused_jobs = paused_jobs + (NEW.state = 'paused')::int    - (OLD.state = 'paused')::int,
        done        = done        + (NEW.state = 'done')::int      - (OLD.state = 'done')::int,
        failed      = failed      + (NEW.state = 'failed')::int    - (OLD.state = 'failed')::int,
        cancelled   = cancelled   + (NEW.state = 'cancelled')::int - (OLD.state = 'cancelled')::int,
        skipped     = skipped     + (NEW.state = 'skipped')::int   - (OLD.state = 'skipped')::int
    WHERE host = NEW.host;
    RETURN NULL;
END $$;
