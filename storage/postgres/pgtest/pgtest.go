// Package pgtest starts a throwaway PostgreSQL cluster for tests: initdb
// into a temporary folder, a server listening on a Unix socket in it only,
// stopped and removed at the end. Run as root (as CI does), the cluster is
// made and run as the "postgres" user, since PostgreSQL refuses to run as
// root.
//
// HEED_TEST_PG picks another way: "off" skips the tests that need a server
// (for a developer who knows what that leaves untested); a postgres:// URL
// uses that server, each test in a database of its own. When no server can
// be started, the tests fail with the reason: never a silent skip.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running cluster.
type Server struct {
	base   string // DSN of its "postgres" database
	dir    string // "" when the server is not ours
	pgctl  string
	asUser []string // the command prefix that runs a command as the cluster's owner
	n      atomic.Int64
}

var (
	once    sync.Once
	shared  *Server
	failure error
)

// Shared returns the cluster of the test binary, starting it on first use.
// Call Stop from TestMain after m.Run.
func Shared(t testing.TB) *Server {
	t.Helper()
	switch v := os.Getenv("HEED_TEST_PG"); {
	case v == "off":
		t.Skip("HEED_TEST_PG=off: the PostgreSQL tests are skipped")
	case strings.HasPrefix(v, "postgres://"), strings.HasPrefix(v, "postgresql://"):
		once.Do(func() { shared = &Server{base: v} })
	default:
		once.Do(func() { shared, failure = start() })
	}
	if failure != nil {
		t.Fatalf("no PostgreSQL server for the tests (install Debian's postgresql, or set HEED_TEST_PG): %v", failure)
	}
	return shared
}

// Stop stops the shared cluster, if this binary started one.
func Stop() {
	if shared != nil {
		shared.stop()
	}
}

// DB creates an empty database for one test and returns its DSN; it is
// dropped when the test ends.
func (s *Server) DB(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("heed_test_%d_%d", os.Getpid(), s.n.Add(1))
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.base)
	if err != nil {
		t.Fatalf("connecting to the test server: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating a test database: %v", err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, s.base)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return withDB(s.base, name)
}

// withDB is dsn with its database set to name.
func withDB(dsn, name string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn
	}
	u.Path = "/" + name
	return u.String()
}

// binDir finds the folder of initdb and pg_ctl: on PATH, else Debian's.
func binDir() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Dir(real), nil
		}
		return filepath.Dir(p), nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	if len(matches) == 0 {
		return "", errors.New("pg_ctl is neither on PATH nor in /usr/lib/postgresql/*/bin")
	}
	return filepath.Dir(matches[len(matches)-1]), nil
}

func start() (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "heed-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, pgctl: filepath.Join(bin, "pg_ctl")}
	owner := ""
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root, and no postgres user to run the server as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		owner = "postgres"
		s.asUser = []string{"runuser", "-u", "postgres", "--"}
	} else if u, err := user.Current(); err == nil {
		owner = u.Username
	}
	data := filepath.Join(dir, "data")
	if out, err := s.run(filepath.Join(bin, "initdb"), "-D", data, "-U", owner, "-A", "trust", "-E", "UTF8",
		"--locale=C", "--no-sync", "--no-instructions"); err != nil {
		return nil, fmt.Errorf("initdb: %v: %s", err, out)
	}
	opts := fmt.Sprintf("-c listen_addresses='' -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200", dir)
	if out, err := s.run(s.pgctl, "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		return nil, fmt.Errorf("pg_ctl start: %v: %s %s", err, out, log)
	}
	s.base = (&url.URL{Scheme: "postgres", User: url.User(owner), Path: "/postgres",
		RawQuery: url.Values{"host": {dir}}.Encode()}).String()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.base)
	if err != nil {
		s.stop()
		return nil, fmt.Errorf("connecting to the new server: %w", err)
	}
	conn.Close(ctx)
	return s, nil
}

func (s *Server) run(name string, args ...string) ([]byte, error) {
	if len(s.asUser) > 0 {
		args = append(append(slices.Clone(s.asUser[1:]), name), args...)
		name = s.asUser[0]
	}
	cmd := exec.Command(name, args...)
	// A fresh machine may name a locale in LANG that it has not generated: initdb refuses it.
	cmd.Env = append(os.Environ(), "LC_ALL=C", "LANG=C")
	return cmd.CombinedOutput()
}

func (s *Server) stop() {
	if s.dir == "" {
		return
	}
	s.run(s.pgctl, "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "stop")
	os.RemoveAll(s.dir)
}
