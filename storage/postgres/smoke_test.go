package postgres

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
)

func TestSmoke(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	got, err := db.Enqueue(ctx, []engine.NewJob{{URL: "http://a/1", Key: "http://a/1", Host: "a"}, {URL: "http://a/1", Key: "http://a/1", Host: "a"}}, 0)
	require.NoError(t, err)
	assert.False(t, got[0].Duplicate)
	assert.True(t, got[1].Duplicate)
	j, err := db.Start(ctx, got[0].ID, "1.part")
	require.NoError(t, err)
	assert.Equal(t, engine.JobActive, j.State)
	_, err = db.Finish(ctx, engine.End{JobID: j.ID, State: engine.JobDone, File: "1", Attempt: &engine.Attempt{JobID: j.ID, URL: j.URL, Host: "a", Outcome: "ok"}})
	require.NoError(t, err)
	hs, err := db.Hosts(ctx)
	require.NoError(t, err)
	require.Len(t, hs, 1)
	assert.Equal(t, int64(1), hs[0].Counts.Done)
	assert.Equal(t, int64(0), hs[0].Counts.Queued)
	require.NoError(t, db.Flush(ctx))
}
