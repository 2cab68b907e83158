-- Heed schema version 4.
--
-- A finished download is recorded done, with its final name, before its part takes that name (J3:
-- a transition is persisted before it is acted on). Until the part has its name, its job is listed
-- here, so that a crash between that commit and the rename names the part at the next start
-- instead of leaving a file nothing records, which would be fetched again beside it (S2). Each
-- is cleared with the next commit, or at the next start; one whose files are not in the download
-- folder stays until a start finds them there, or its job is queued again.
CREATE TABLE naming (
    job_id INTEGER PRIMARY KEY REFERENCES jobs (id),
    part   TEXT    NOT NULL
) STRICT;
