-- Heed schema version 6.
--
-- A host's pacing outlives the run (G2, G4): the tokens left in its bucket when its state was
-- saved (tokens_at, the wall time then; 0 = never saved, a full bucket) and the end of its
-- jitter spacing. Without them each `heed get` started every host with a full bucket, so a
-- script calling it once per URL was not held to the host's rate at all.
ALTER TABLE hosts ADD COLUMN tokens      REAL    NOT NULL DEFAULT 0;
ALTER TABLE hosts ADD COLUMN tokens_at   INTEGER NOT NULL DEFAULT 0;
ALTER TABLE hosts ADD COLUMN space_until INTEGER NOT NULL DEFAULT 0;
