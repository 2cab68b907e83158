-- Heed schema version 2.
--
-- jobs_due (next due jobs over all hosts) had no reader: the engine loads every queued job by host
-- through jobs_state_host_due and schedules in memory. Keeping it cost an index change on every
-- start and every re-queue of a job, about a quarter of a start's commit.
DROP INDEX IF EXISTS jobs_due;
