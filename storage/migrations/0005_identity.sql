-- Heed schema version 5.
--
-- Every database gets an identity of its own: 128 random bits, in hex. Heed marks each part file it
-- creates with this identity and the job's id, so that after a crash it can tell a part it created
-- but had not yet recorded (a download cut off in its first moments, or one whose last bytes had
-- arrived but were not yet recorded done) from anybody else's file, remove it, and fetch that
-- download again under its own name rather than beside it as "name (1)" (S2).
INSERT OR IGNORE INTO settings (key, value) VALUES ('identity', lower(hex(randomblob(16))));

-- The jobs a crash left active, listed when a start queues them again, with the download folder of
-- the run the crash cut off (the setting 'run_folder', '' when unknown), and cleared once a download
-- run in that folder has looked for the parts they left: whichever command opens the database first
-- after a crash, and whatever folder the next run uses, the parts are looked for where they are.
CREATE TABLE interrupted (
    job_id INTEGER PRIMARY KEY REFERENCES jobs (id),
    folder TEXT    NOT NULL DEFAULT ''
) STRICT;
