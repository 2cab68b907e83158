-- Heed schema version 10.
--
-- Crawl mode (SPEC §10). A job a crawl found carries its crawl, its depth from a seed and the page
-- that linked to it (W10), and whether it is a page or a sitemap to read (W7). A crawl is a row of
-- its own: its seeds and rules, whether it runs, the jobs it has created (for --max-pages) and what
-- it counted without storing one by one (links out of scope) or summed (bytes). A host's robots.txt
-- is kept as fetched, with when and how, so that a restart does not fetch it again (W4); a host's
-- Crawl-delay is kept with its politeness state (W5).
ALTER TABLE jobs ADD COLUMN crawl_id INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN depth    INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN found_on TEXT    NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN kind     TEXT    NOT NULL DEFAULT '';

-- A crawl's jobs by state: its counts, and what pausing it moves.
CREATE INDEX jobs_crawl ON jobs (crawl_id, state) WHERE crawl_id <> 0;

CREATE TABLE crawls (
    id           INTEGER PRIMARY KEY,
    seeds        TEXT    NOT NULL CHECK (json_valid(seeds)),
    scope        TEXT    NOT NULL,
    depth        INTEGER NOT NULL,
    max_pages    INTEGER NOT NULL DEFAULT 0,
    include      TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(include)),
    exclude      TEXT    NOT NULL DEFAULT '[]' CHECK (json_valid(exclude)),
    robots       INTEGER NOT NULL DEFAULT 1,
    state        TEXT    NOT NULL DEFAULT 'running' CHECK (state IN ('running', 'paused', 'cancelled')),
    created_at   INTEGER NOT NULL,
    pages        INTEGER NOT NULL DEFAULT 0,
    out_of_scope INTEGER NOT NULL DEFAULT 0,
    bytes        INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE TABLE robots (
    host       TEXT    PRIMARY KEY,
    fetched_at INTEGER NOT NULL,
    status     INTEGER NOT NULL,
    body       BLOB    NOT NULL,
    error      TEXT    NOT NULL DEFAULT ''
) STRICT;

ALTER TABLE hosts ADD COLUMN crawl_delay_ns INTEGER NOT NULL DEFAULT 0;
