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

func (s *partStore) Enqueue(_ context.Context, jobs []NewJob) ([]Enqueued, error) {
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

// J1, J2: a part that fails before the rest of the list was parsed leaves
// the report that of the whole list, as when it was parsed at once: its
// rejected lines, and the repeats of URLs the parts before stored.
func TestAddThen_J1_ErrorBeforeTheRestReportsTheWholeList(t *testing.T) {
	var b strings.Builder
	for i := range addFirstPart { // two URLs a line: the first lines make two parts
		fmt.Fprintf(&b, "http://a.example/%d http://b.example/%d\n", i, i)
	}
	b.WriteString("ftp://x/y\nhttp://a.example/0\n")
	for failAt, stored := range map[int]int{1: 0, 2: addFirstPart} {
		e := &Engine{store: &partStore{ids: map[string]int64{}, failAt: failAt},
			core: NewCore(Config{Defaults: DefaultTunables(), Seed: 1, GlobalInflight: 16})}
		rep, err := e.AddThen(context.Background(), b.String(), nil)
		require.Error(t, err)
		assert.Len(t, rep.Queued, stored, "failing at part %d", failAt)
		require.Len(t, rep.Rejected, 1, "failing at part %d", failAt)
		assert.Equal(t, addFirstPart+1, rep.Rejected[0].Line)
		if stored > 0 {
			assert.Equal(t, []string{"http://a.example/0"}, rep.Duplicates, "a repeat of a stored URL")
		} else {
			assert.Empty(t, rep.Duplicates, "its first was not stored")
		}
	}
}
