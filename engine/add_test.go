package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// partStore is a Store that only enqueues: ids in order, and the call
// failAt (1 for the first) fails, as a full disk would.
type partStore struct {
	Store
	ids    map[string]int64
	calls  int
	failAt int
}

func (s *partStore) Enqueue(_ context.Context, jobs []NewJob, _ int64) ([]Enqueued, error) {
	s.calls++
	if s.calls == s.failAt {
		return nil, errors.New("disk full")
	}
	out := make([]Enqueued, len(jobs))
	for i, j := range jobs {
		if id, ok := s.ids[j.URL]; ok {
			out[i] = Enqueued{ID: id, Duplicate: true, State: JobQueued}
			continue
		}
		s.ids[j.URL] = int64(len(s.ids) + 1)
		out[i] = Enqueued{ID: s.ids[j.URL], State: JobQueued}
	}
	return out, nil
}

// J1, J2: a list is stored in parts as it is read; when storing a part
// fails, the report holds what the parts before it did — their new jobs,
// their rejected lines, their repeats of URLs stored before — with the
// error, and nothing after it is read.
func TestAddFrom_J1_ErrorKeepsTheReportOfThePartsBefore(t *testing.T) {
	var b strings.Builder
	b.WriteString("ftp://x/y\n")
	for i := range 4 * addFirstPart {
		fmt.Fprintf(&b, "http://a.example/%d\n", i)
	}
	b.WriteString("http://a.example/0\n")
	for failAt, stored := range map[int]int{1: 0, 2: addFirstPart, 3: 5 * addFirstPart} {
		e := &Engine{store: &partStore{ids: map[string]int64{}, failAt: failAt},
			core: NewCore(Config{Defaults: DefaultTunables(), Seed: 1, GlobalInflight: 16})}
		rep, err := e.Add(context.Background(), b.String())
		if stored == 5*addFirstPart { // all of it in two parts: no third
			require.NoError(t, err)
			stored = 4 * addFirstPart
			assert.Equal(t, []string{"http://a.example/0"}, rep.Duplicates, "a repeat of a stored URL")
		} else {
			require.Error(t, err)
			assert.Empty(t, rep.Duplicates)
		}
		assert.Len(t, rep.Queued, stored, "failing at part %d", failAt)
		if failAt > 1 {
			require.Len(t, rep.Rejected, 1, "failing at part %d", failAt)
			assert.Equal(t, 1, rep.Rejected[0].Line)
		}
	}
}
