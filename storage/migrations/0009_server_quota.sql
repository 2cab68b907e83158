-- Heed schema version 9.
--
-- G12: what a host's server last said of its quota, kept with the host's state so that a restart
-- inside a quota window does not spend it again. Limits and the requests left are -1 when the
-- server did not say; instants are unix nanoseconds (0 = none).
ALTER TABLE hosts ADD COLUMN quota_name      TEXT    NOT NULL DEFAULT '';
ALTER TABLE hosts ADD COLUMN quota_form      TEXT    NOT NULL DEFAULT '';
ALTER TABLE hosts ADD COLUMN quota_limit     INTEGER NOT NULL DEFAULT -1;
ALTER TABLE hosts ADD COLUMN quota_window_ns INTEGER NOT NULL DEFAULT 0;
ALTER TABLE hosts ADD COLUMN quota_remaining INTEGER NOT NULL DEFAULT -1;
ALTER TABLE hosts ADD COLUMN quota_reset     INTEGER NOT NULL DEFAULT 0;
ALTER TABLE hosts ADD COLUMN quota_seen      INTEGER NOT NULL DEFAULT 0;
ALTER TABLE hosts ADD COLUMN quota_until     INTEGER NOT NULL DEFAULT 0;
