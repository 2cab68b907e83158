-- Heed schema version 7.
--
-- A successful attempt leaves attempts_outcome: it is by far the most common outcome, history
-- filtered by it reads the newest attempts first and finds its page at once, and its entry was one
-- more index change for every download. The other outcomes keep the index, which finds them among
-- a million successes.
DROP INDEX IF EXISTS attempts_outcome;
CREATE INDEX attempts_outcome ON attempts (outcome, id) WHERE outcome <> 'ok';
