package ui

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
	"heed/storage/postgres"
	"heed/storage/postgres/pgtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.Stop()
	os.Exit(code)
}

// M4: the window on a fleet's PostgreSQL queue has a Workers tab: each
// worker with its figures and whether it is alive, and each host with the
// worker that holds it. The window on one machine's database has none.
func TestWorkers_M4_FleetViewShowsWorkersAndOwners(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Shared(t).DB(t)
	other, err := postgres.Open(ctx, dsn, postgres.WithWorker("left"))
	require.NoError(t, err)
	t.Cleanup(func() { other.Close() })
	_, err = other.Enqueue(ctx, []engine.NewJob{{URL: "http://held.example/a", Key: "http://held.example/a", Host: "held.example"},
		{URL: "http://free.example/b", Key: "http://free.example/b", Host: "free.example"}}, 0)
	require.NoError(t, err)
	require.NoError(t, other.Heartbeat(ctx, engine.WorkerStats{Hosts: 1, Inflight: 1, Requests: 42, Rate: 1.5}))
	states, _, err := other.Claim(ctx, 1)
	require.NoError(t, err)
	require.Len(t, states, 1)
	held := states[0].Host

	db, err := postgres.Open(ctx, dsn, postgres.WithWorker("window"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	a := test.NewTempApp(t)
	dir := t.TempDir()
	eng, err := engine.New(ctx, db, engine.Options{Dir: filepath.Join(dir, "dl"), Version: "test"})
	require.NoError(t, err)
	t.Cleanup(func() { eng.Close() })
	w := New(a, eng, Options{Version: "test", DBPath: db.Path(), Dir: filepath.Join(dir, "dl"), Feed: NewFeed()})
	w.inline = true
	w.win.Resize(fyne.NewSize(1240, 760))
	w.win.Show()
	t.Cleanup(func() { w.bg.Wait(); w.Stop() })

	require.NotNil(t, w.workers, "a Workers tab on a fleet's queue")
	w.selectTab(tabWorkers)
	require.Len(t, w.workers.workers, 1)
	assert.Equal(t, "left", w.workers.workers[0].Name)
	assert.True(t, w.workers.workers[0].Alive)
	assert.Contains(t, w.workers.summary.Text, "1 worker alive of 1")
	assert.Contains(t, w.workers.summary.Text, "1 host held of 2")
	owners := map[string]string{}
	for _, h := range w.workers.hosts {
		owners[h.Host] = h.Owner
	}
	assert.Equal(t, "left", owners[held])
	for i, h := range w.workers.hosts {
		c := newCell()
		w.workers.hostCell(tableID(i, fcOwner), c)
		if h.Host == held {
			assert.Equal(t, "left", c.full, "its owner shown")
		} else {
			assert.Equal(t, "nobody", c.full)
		}
	}

	plain := newHarness(t)
	assert.Nil(t, plain.w.workers, "no Workers tab on one machine's database")
}
