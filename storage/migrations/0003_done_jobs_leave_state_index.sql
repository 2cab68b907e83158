-- Heed schema version 3.
--
-- A done job leaves jobs_state_host_due: finishing a download no longer adds an entry in its host's
-- stretch of that index, which was one more page written in every commit of finished downloads (at
-- 20,000 small downloads, about a sixth of the database's work). Queued, active, paused, failed and
-- cancelled jobs stay in it (loading the queue, next due jobs, recovery, counts of those states).
-- jobs_host (which never changes after a job is queued) gives each host's jobs and totals; a
-- host's done count is its total less its other states.
DROP INDEX IF EXISTS jobs_state_host_due;
CREATE INDEX jobs_state_host_due ON jobs (state, host, not_before) WHERE state <> 'done';
CREATE INDEX jobs_host ON jobs (host);
