package storage

import (
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One failing write in a batch is undone and fails alone: the writes it shared a transaction
// with commit in transactions of their own, and the writer's connection is left with no
// transaction open, so the next write commits too.
func TestWriter_S5_FailingWriteFailsAlone(t *testing.T) {
	db, path := openTest(t)
	setting := func(key string) func(*wtx) error {
		return func(w *wtx) error {
			_, err := w.exec(`INSERT INTO settings (key, value) VALUES (?, 'x')`, key)
			return err
		}
	}
	boom := errors.New("boom")

	// Hold the writer in a transaction while the next two ops queue up, so
	// that it takes them as one batch.
	release, holding := make(chan struct{}), make(chan struct{})
	var once sync.Once
	held := make(chan error, 1)
	go func() {
		held <- db.write(bg, "hold", func(*wtx) error {
			once.Do(func() { close(holding) })
			<-release
			return nil
		})
	}()
	<-holding
	require.NoError(t, db.submit(nil, op{name: "bad", run: func(w *wtx) error {
		if err := setting("bad")(w); err != nil {
			return err
		}
		return boom
	}}))
	good := make(chan error, 1)
	go func() { good <- db.write(bg, "good", setting("good")) }()
	for len(db.ops) < 2 { // both queued behind the held transaction
		runtime.Gosched()
	}
	close(release)
	require.NoError(t, <-held)
	require.NoError(t, <-good, "the good write commits on its own")
	require.ErrorIs(t, db.Flush(bg), boom, "the bad write's error is reported")
	require.NoError(t, db.write(bg, "after", setting("after")), "no transaction was left open")

	raw := rawOpenRO(t, path)
	var keys []string
	rows, err := raw.Query(`SELECT key FROM settings WHERE key IN ('bad', 'good', 'after') ORDER BY key`)
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		keys = append(keys, k)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{"after", "good"}, keys, "the bad write's insert was undone")
}
