package storage

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
)

func TestOpen_S1_WALBusyTimeoutForeignKeys(t *testing.T) {
	db, _ := openTest(t)
	var mode string
	var fk, busy, sync int
	require.NoError(t, db.wc.QueryRowContext(bg, "PRAGMA journal_mode").Scan(&mode))
	require.NoError(t, db.wc.QueryRowContext(bg, "PRAGMA foreign_keys").Scan(&fk))
	require.NoError(t, db.wc.QueryRowContext(bg, "PRAGMA busy_timeout").Scan(&busy))
	require.NoError(t, db.wc.QueryRowContext(bg, "PRAGMA synchronous").Scan(&sync))
	assert.Equal(t, "wal", mode)
	assert.Equal(t, 1, fk)
	assert.Equal(t, 5000, busy)
	assert.Equal(t, 1, sync, "synchronous=NORMAL")
	var limit int64
	require.NoError(t, db.wc.QueryRowContext(bg, "PRAGMA journal_size_limit").Scan(&limit))
	assert.Equal(t, int64(64<<20), limit)
	assert.Equal(t, 1, db.w.Stats().MaxOpenConnections, "one writer connection")

	_, err := db.r.Exec("INSERT INTO settings (key, value) VALUES ('a', 'b')")
	assert.Error(t, err, "the query pool is read-only")

	_, err = db.wc.ExecContext(bg, "INSERT INTO attempts (job_id, url, host, attempt, started_at, outcome) VALUES (999, 'u', 'h', 1, 1, 'ok')")
	assert.Error(t, err, "foreign keys are enforced")
}

func TestOpen_S1_SyncFullOption(t *testing.T) {
	db, _ := openTest(t, WithSyncFull())
	var sync int
	require.NoError(t, db.wc.QueryRowContext(bg, "PRAGMA synchronous").Scan(&sync))
	assert.Equal(t, 2, sync)
}

func TestOpen_S1_CreatesParentDirectories(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "heed.db")
	db, err := Open(path)
	require.NoError(t, err)
	defer db.Close()
	assert.FileExists(t, path)
	assert.Equal(t, path, db.Path())
}

func TestOpen_S1_EmptyPathIsDefaultPath(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_DATA_HOME", filepath.Join(home, "data"))
	t.Setenv("LocalAppData", filepath.Join(home, "appdata"))
	want, err := DefaultPath()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(want, home), want)

	db, err := Open("")
	require.NoError(t, err)
	defer db.Close()
	assert.Equal(t, want, db.Path())
	assert.FileExists(t, want)
}

func TestDefaultPath_S1_UserDataDirectory(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	cases := []struct {
		name string
		goos string
		env  map[string]string
		want string
	}{
		{"linux XDG_DATA_HOME", "linux", map[string]string{"XDG_DATA_HOME": "/data"}, "/data/heed/heed.db"},
		{"linux default", "linux", nil, "/home/u/.local/share/heed/heed.db"},
		{"linux relative XDG ignored", "linux", map[string]string{"XDG_DATA_HOME": "rel"}, "/home/u/.local/share/heed/heed.db"},
		{"freebsd like linux", "freebsd", nil, "/home/u/.local/share/heed/heed.db"},
		{"macOS", "darwin", nil, "/home/u/Library/Application Support/Heed/heed.db"},
		{"windows", "windows", map[string]string{"LocalAppData": "/appdata"}, filepath.Join("/appdata", "Heed", "heed.db")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := defaultPath(c.goos, env(c.env), "/home/u")
			require.NoError(t, err)
			assert.Equal(t, filepath.FromSlash(c.want), got)
		})
	}
	_, err := defaultPath("windows", env(nil), "")
	assert.Error(t, err, "windows without LocalAppData")
}

func TestOpen_S6_SecondOpenInProcessRefused(t *testing.T) {
	db, path := openTest(t)
	ids := enqueueURLs(t, db, "a.example", "https://a.example/1")

	second, err := Open(path)
	require.Error(t, err)
	assert.Nil(t, second)
	assert.ErrorIs(t, err, ErrLocked)
	var oe *OpenError
	require.ErrorAs(t, err, &oe)
	assert.Equal(t, path, oe.Path)
	assert.Contains(t, err.Error(), path, "the message names the file")

	// The first one is unharmed.
	j, err := db.Job(bg, ids[0])
	require.NoError(t, err)
	assert.Equal(t, engine.JobQueued, j.State)
	enqueueURLs(t, db, "a.example", "https://a.example/2")

	// Once the first closes, the file opens again.
	require.NoError(t, db.Close())
	again, err := Open(path)
	require.NoError(t, err)
	defer again.Close()
	counts, err := again.Counts(bg)
	require.NoError(t, err)
	assert.Equal(t, engine.Counts{Queued: 2}, counts)
}

// S6: the lock is the database file's, not its name's: a symlink or a hard link to an open
// database is refused too (each name would otherwise get a -wal file of its own, and two writers).
func TestOpen_S6_OtherNamesOfTheFileRefused(t *testing.T) {
	db, path := openTest(t)
	enqueueURLs(t, db, "a.example", "https://a.example/1")
	dir := t.TempDir()
	sym, hard := filepath.Join(dir, "symlink.db"), filepath.Join(dir, "hardlink.db")
	require.NoError(t, os.Symlink(path, sym))
	names := []string{sym}
	if err := os.Link(path, hard); err == nil {
		names = append(names, hard)
	} else {
		t.Logf("no hard link here (%v): only the symlink is tried", err)
	}
	for _, name := range names {
		second, err := Open(name)
		assert.ErrorIs(t, err, ErrLocked, name)
		if second != nil {
			second.Close()
		}
	}
	require.NoError(t, db.Close())
	again, err := Open(sym)
	require.NoError(t, err, "once the first closes, any name opens it")
	require.NoError(t, again.Close())
}

func TestOpen_S6_SecondProcessRefused(t *testing.T) {
	db, path := openTest(t)
	run := func() (int, string) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), envChild+"=open", envDB+"="+path)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), stderr.String()
		}
		require.NoError(t, err)
		return 0, stderr.String()
	}
	code, msg := run()
	assert.Equal(t, 3, code, "the second Heed exits 3: %s", msg)
	assert.Contains(t, msg, path, "the message names the file")
	assert.Contains(t, msg, ErrLocked.Error())

	enqueueURLs(t, db, "a.example", "https://a.example/1") // first one unharmed
	require.NoError(t, db.Close())
	code, msg = run()
	assert.Equal(t, 0, code, "after the first Heed exits, a new one opens: %s", msg)
}

func TestOpen_S6_NotDatabaseNeverOverwritten(t *testing.T) {
	cases := []struct {
		name    string
		content []byte
	}{
		{"text file", []byte("these are my notes, not a database\n")},
		{"shorter than the header", []byte("SQLite")},
		{"almost the header", []byte("SQLite format 2\x00" + string(make([]byte, 4096)))},
		{"header then garbage", append([]byte(sqliteHeader), bytes.Repeat([]byte{0xff}, 4096)...)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "heed.db")
			require.NoError(t, os.WriteFile(path, c.content, 0o644))

			db, err := Open(path)
			require.Error(t, err)
			assert.Nil(t, db)
			assert.ErrorIs(t, err, ErrNotDatabase)
			assert.Contains(t, err.Error(), path)

			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, c.content, got, "the file is never overwritten")
			assert.NoFileExists(t, path+"-wal")
		})
	}
}

func TestOpen_S6_OtherApplicationsDatabaseNeverTouched(t *testing.T) {
	cases := []struct {
		name string
		sql  string
	}{
		{"tables, no application id", "CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine')"},
		{"another application id", "PRAGMA application_id = 42"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "other.db")
			raw := rawOpen(t, path)
			_, err := raw.Exec(c.sql)
			require.NoError(t, err)
			require.NoError(t, raw.Close())
			before, err := os.ReadFile(path)
			require.NoError(t, err)

			db, err := Open(path)
			require.Error(t, err)
			assert.Nil(t, db)
			assert.ErrorIs(t, err, ErrNotDatabase)
			assert.Contains(t, err.Error(), path)
			after, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, before, after, "not even the journal mode changed")
		})
	}
}

func TestOpen_S6_UnreadableRefused(t *testing.T) {
	type tc struct {
		name  string
		setup func(t *testing.T, path string)
	}
	cases := []tc{
		{"directory at the path", func(t *testing.T, path string) { require.NoError(t, os.MkdirAll(path, 0o755)) }},
		{"parent is a file", func(t *testing.T, path string) {
			require.NoError(t, os.WriteFile(filepath.Dir(path), []byte("x"), 0o644))
		}},
	}
	if os.Geteuid() != 0 { // root reads files whatever their mode
		cases = append(cases, tc{"mode 000", func(t *testing.T, path string) {
			require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
			require.NoError(t, os.WriteFile(path, []byte(sqliteHeader), 0o000))
		}})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sub", "heed.db")
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Dir(path)), 0o755))
			c.setup(t, path)
			db, err := Open(path)
			require.Error(t, err)
			assert.Nil(t, db)
			assert.ErrorIs(t, err, ErrUnreadable)
			assert.Contains(t, err.Error(), path)
		})
	}
}

// copyFile copies src to dst if src exists, and reports whether it did.
func copyFile(t *testing.T, src, dst string) bool {
	in, err := os.Open(src)
	if os.IsNotExist(err) {
		return false
	}
	require.NoError(t, err)
	defer in.Close()
	out, err := os.Create(dst)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
	return true
}

// RELIABILITY 33: a database whose -wal and -shm files are there at start (a crash left them)
// opens normally, with what the WAL holds; Open deletes neither.
func TestOpen_RELIABILITY33_WalAndShmPresentAtStart(t *testing.T) {
	db, path := openTest(t)
	ids := enqueueURLs(t, db, "a.example", "https://a.example/1", "https://a.example/2")
	_, err := db.Start(bg, ids[0], "1.part")
	require.NoError(t, err)
	require.NoError(t, db.Flush(bg)) // the writer is idle: the copies below are one moment's state

	// Snapshot the files of the open database as a crash would leave them.
	crashed := filepath.Join(t.TempDir(), "heed.db")
	require.True(t, copyFile(t, path, crashed))
	require.True(t, copyFile(t, path+"-wal", crashed+"-wal"), "the committed jobs are still in the WAL")
	require.True(t, copyFile(t, path+"-shm", crashed+"-shm"))
	walSize := func() int64 {
		fi, err := os.Stat(crashed + "-wal")
		require.NoError(t, err)
		return fi.Size()
	}
	require.Positive(t, walSize())

	re, err := Open(crashed)
	require.NoError(t, err)
	defer re.Close()
	assert.FileExists(t, crashed+"-wal", "Open never deletes the WAL")
	assert.FileExists(t, crashed+"-shm")
	assert.Equal(t, int64(1), re.Recovered())
	for _, id := range ids {
		j, err := re.Job(bg, id)
		require.NoError(t, err, "the jobs only the WAL held are there")
		assert.Equal(t, engine.JobQueued, j.State)
	}
	j, err := re.Job(bg, ids[0])
	require.NoError(t, err)
	assert.Equal(t, "1.part", j.Part, "the interrupted job keeps its part")
	assertCounts(t, re)
}

// S6 with a reader: while one Heed holds the database, another may open it for queries only
// (heed jobs beside a heed get). It sees what was committed, takes no lock, and cannot write.
func TestOpenReader_S6_QueriesBesideTheHolder(t *testing.T) {
	db, path := openTest(t)
	ids := enqueueURLs(t, db, "a.example", "https://a.example/1", "https://a.example/2")
	_, err := Open(path)
	require.ErrorIs(t, err, ErrLocked, "a second writer is still refused")

	r, err := OpenReader(path)
	require.NoError(t, err)
	jobs, err := r.Jobs(bg, engine.JobQuery{})
	require.NoError(t, err)
	assert.Len(t, jobs, 2)
	hosts, err := r.Hosts(bg)
	require.NoError(t, err)
	require.Len(t, hosts, 1)
	assert.Equal(t, engine.Counts{Queued: 2}, hosts[0].Counts)

	// The holder goes on writing; the reader sees each commit.
	_, err = db.SetState(bg, ids[:1], []engine.JobState{engine.JobQueued}, engine.JobPaused)
	require.NoError(t, err)
	jobs, err = r.Jobs(bg, engine.JobQuery{State: engine.JobPaused})
	require.NoError(t, err)
	assert.Len(t, jobs, 1)
	counts, err := r.Counts(bg)
	require.NoError(t, err)
	assert.Equal(t, engine.Counts{Queued: 1, Paused: 1}, counts)

	_, err = r.Enqueue(bg, newJobs("a.example", "https://a.example/3"), noAgain)
	assert.ErrorIs(t, err, ErrReadOnly)
	_, err = r.Start(bg, ids[1], "")
	assert.ErrorIs(t, err, ErrReadOnly)
	assert.ErrorIs(t, r.RecordAttempt(engine.Attempt{JobID: ids[1]}), ErrReadOnly)
	assert.ErrorIs(t, r.SetSetting(bg, "k", "v"), ErrReadOnly)
	assert.ErrorIs(t, r.Flush(bg), ErrReadOnly)
	require.NoError(t, r.Close())
	assert.ErrorIs(t, r.Close(), ErrClosed)

	j, err := db.Job(bg, ids[1])
	require.NoError(t, err)
	assert.Equal(t, engine.JobQueued, j.State, "the holder is unharmed")

	_, err = OpenReader(filepath.Join(t.TempDir(), "missing.db"))
	assert.ErrorIs(t, err, ErrUnreadable)
	empty := filepath.Join(t.TempDir(), "new.db") // as a first heed get creates it
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	_, err = OpenReader(empty)
	assert.ErrorIs(t, err, ErrNotReady)
	assert.ErrorContains(t, err, "try again in a moment")
	notDB := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(notDB, []byte("not a database at all, just notes"), 0o644))
	_, err = OpenReader(notDB)
	assert.ErrorIs(t, err, ErrNotDatabase)
}

// RELIABILITY 36: a Heed database whose pages are damaged is called damaged — it is the
// person's own database, not some other file — and is left as it is.
func TestOpen_RELIABILITY36_DamagedDatabaseNamedAndLeftAlone(t *testing.T) {
	db, path := openTest(t)
	urls := make([]string, 400)
	for i := range urls {
		urls[i] = "http://a.example/files/" + strings.Repeat("x", 40) + string(rune('a'+i%26)) + time.Duration(i).String()
	}
	enqueueURLs(t, db, "a.example", urls...)
	require.NoError(t, db.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Greater(t, len(data), 8*4096, "a database of several pages")
	for i := 4096; i < len(data); i++ { // every page but the first (the header and the schema)
		data[i] = 0xff
	}
	require.NoError(t, os.WriteFile(path, data, 0o644))

	db, err = Open(path)
	require.Error(t, err)
	assert.Nil(t, db)
	assert.ErrorIs(t, err, ErrDamaged)
	assert.NotErrorIs(t, err, ErrNotDatabase)
	assert.ErrorContains(t, err, path)
	assert.ErrorContains(t, err, "database file is damaged")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, data, after, "the damaged file is left as it is")
}

// RELIABILITY 36: a lock held by another program (here a write transaction of a plain SQLite
// connection, as the sqlite3 shell's BEGIN EXCLUSIVE) is not blamed on another Heed.
func TestOpen_RELIABILITY36_LockedByAnotherProgram(t *testing.T) {
	db, path := openTest(t)
	enqueueURLs(t, db, "a.example", "http://a.example/1")
	require.NoError(t, db.Close())
	raw := rawOpen(t, path)
	tx, err := raw.Begin()
	require.NoError(t, err)
	_, err = tx.Exec("INSERT INTO settings (key, value) VALUES ('held', 'by sqlite3')") // takes the write lock
	require.NoError(t, err)
	defer tx.Rollback()

	db, err = Open(path, withBusyTimeout(50*time.Millisecond))
	require.Error(t, err)
	assert.Nil(t, db)
	assert.ErrorIs(t, err, ErrBusy)
	assert.NotErrorIs(t, err, ErrLocked, "no other Heed holds it")
	assert.ErrorContains(t, err, path)
	assert.ErrorContains(t, err, "locked by another program (not Heed)")

	r, err := OpenReader(path) // what is committed can still be listed
	require.NoError(t, err)
	defer r.Close()
	counts, err := r.Counts(bg)
	require.NoError(t, err)
	assert.Equal(t, engine.Counts{Queued: 1}, counts)
}

// A database on read-only media (a CD, a read-only mount) can still be
// listed: OpenReader opens it immutable, since no Heed can be writing it
// there and SQLite cannot keep its shared-memory file beside it.
func TestOpenReader_ReadOnlyMedia(t *testing.T) {
	db, path := openTest(t)
	_, err := db.Enqueue(bg, newJobs("ro.example", "https://ro.example/1", "https://ro.example/2"), noAgain)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	media := filepath.Join(t.TempDir(), "media")
	require.NoError(t, os.Mkdir(media, 0o755))
	if os.Geteuid() == 0 {
		// root writes through permissions: a read-only mount is what read-only media are
		require.NoError(t, exec.Command("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", media).Run(), "mount a tmpfs")
		t.Cleanup(func() { exec.Command("umount", media).Run() })
	}
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	copyPath := filepath.Join(media, "heed.db")
	require.NoError(t, os.WriteFile(copyPath, b, 0o444))
	if os.Geteuid() == 0 {
		require.NoError(t, exec.Command("mount", "-o", "remount,ro", media).Run())
	} else {
		require.NoError(t, os.Chmod(media, 0o555))
		t.Cleanup(func() { os.Chmod(media, 0o755) })
	}
	require.False(t, writable(media), "the media are read-only")

	ro, err := OpenReader(copyPath)
	require.NoError(t, err)
	defer ro.Close()
	jobs, err := ro.Jobs(bg, engine.JobQuery{})
	require.NoError(t, err)
	assert.Len(t, jobs, 2)
	hosts, err := ro.Hosts(bg)
	require.NoError(t, err)
	require.Len(t, hosts, 1)
	assert.Equal(t, int64(2), hosts[0].Counts.Queued)
}
