//go:build !unix

package cli

import (
	"io"

	"heed/engine"
)

// Handoff is the hand-off socket, which only Unix systems have (handoff.go):
// elsewhere a second Heed on a database is refused, as before.
type Handoff struct{}

// SocketPath is the hand-off socket of the SQLite database at dbPath.
func SocketPath(dbPath string) string { return dbPath + ".sock" }

// ServeHandoff does nothing on this system.
func ServeHandoff(dbPath string, eng *engine.Engine, focus func()) (*Handoff, error) {
	return nil, nil
}

// Close does nothing.
func (h *Handoff) Close() {}

func handOffAdd(Env, *common, *queueOpts, io.Reader) (int, bool) { return 0, false }

func handOffWindow(Env, *common, []string) (int, bool) { return 0, false }
