package storage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
)

// childCrash plays a busy Heed until it is killed: it enqueues batches of URLs and moves jobs
// through their states as the engine does, printing to stdout
//
//	Q <id> <url>     after Enqueue acknowledged url as queued with id
//	I <id> <state>   before asking for a transition of job id to state
//	S <id> <state>   after the transition was acknowledged
//	B <n> <count>    before enqueueing URLs n … n+count-1 of this round in one call
//
// Each call's lines are written with one write, after the call returned.
func childCrash(path, roundStr string) int {
	round, _ := strconv.Atoi(roundStr)
	db, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		return 1
	}
	os.Stdout.WriteString("ready\n")
	rnd := rand.New(rand.NewPCG(uint64(round), 42))
	var queued, active, paused []int64
	var acked []string
	take := func(s *[]int64) (int64, bool) {
		if len(*s) == 0 {
			return 0, false
		}
		i := rnd.IntN(len(*s))
		id := (*s)[i]
		(*s)[i] = (*s)[len(*s)-1]
		*s = (*s)[:len(*s)-1]
		return id, true
	}
	say := func(format string, args ...any) { fmt.Fprintf(os.Stdout, format, args...) }
	n := 0
	for batch := 0; ; batch++ {
		size := 20 + rnd.IntN(300)
		big := batch == 0 && round%2 == 1 // RELIABILITY 31: a paste of 10,000 URLs
		if big {
			size = 10_000
			say("B %d %d\n", n, size)
		}
		jobs := make([]engine.NewJob, size)
		for i := range jobs {
			u := crashURL(round, n)
			jobs[i] = engine.NewJob{URL: u, Key: u, Host: crashHost(n)}
			n++
		}
		dup := -1
		if len(acked) > 0 && !big { // J2: an acknowledged URL sent again is a duplicate
			dup = rnd.IntN(len(jobs))
			u := acked[rnd.IntN(len(acked))]
			jobs[dup].URL, jobs[dup].Key = u, u
		}
		res, err := db.Enqueue(bg, jobs, noAgain)
		if err != nil {
			return fail("enqueue", err)
		}
		var buf bytes.Buffer
		for i, it := range res {
			if it.Duplicate != (i == dup) {
				return fail("enqueue", fmt.Errorf("input %d: duplicate=%v", i, it.Duplicate))
			}
			if !it.Duplicate {
				fmt.Fprintf(&buf, "Q %d %s\n", it.ID, jobs[i].URL)
				queued = append(queued, it.ID)
				acked = append(acked, jobs[i].URL)
			}
		}
		os.Stdout.Write(buf.Bytes())

		for range 8 {
			switch k := rnd.IntN(8); {
			case k < 3: // start a download and note where its bytes go
				id, ok := take(&queued)
				if !ok {
					continue
				}
				say("I %d active\n", id)
				job, err := db.Start(bg, id, fmt.Sprintf("%d.part", id))
				if err != nil {
					return fail("start", err)
				}
				say("S %d active\n", id)
				active = append(active, id)
				err = db.Note(id, engine.Resume{Part: job.Part, Bytes: int64(rnd.IntN(1 << 20)), Size: -1, ETag: `"e"`})
				if err != nil {
					return fail("note", err)
				}
				err = db.RecordAttempt(engine.Attempt{JobID: id, URL: "u", Host: "h", Attempt: job.Attempts,
					StartedAt: time.Now(), Outcome: "redirect"})
				if err != nil {
					return fail("record attempt", err)
				}
			case k < 6: // finish, retry or fail a download
				id, ok := take(&active)
				if !ok {
					continue
				}
				part := fmt.Sprintf("%d.part", id)
				end := engine.End{JobID: id, Attempt: &engine.Attempt{JobID: id, URL: "u", Host: "h", Attempt: 1,
					StartedAt: time.Now(), Outcome: "ok", Status: 200}}
				switch k {
				case 3:
					end.State, end.File, end.SHA256, end.Status = engine.JobDone, fmt.Sprintf("%d.bin", id), "ab", 200
					end.Resume = engine.Resume{Part: part, Bytes: 10, Size: 10}
				case 4:
					end.State, end.NotBefore, end.Error, end.Status = engine.JobQueued, time.Now().Add(time.Second), "reset", 503
					end.GiveBack, end.Throttled = true, true
					end.Resume = engine.Resume{Part: part, Bytes: 5, Size: -1, ETag: `"e"`}
					end.Attempt.Outcome = "throttled"
				case 5:
					end.State, end.Error, end.Status = engine.JobFailed, "gone", 404
					end.Resume = engine.Resume{Size: -1}
					end.Attempt.Outcome = "failed"
				}
				say("I %d %s\n", id, end.State)
				if err := finish(db, bg, end); err != nil {
					return fail("finish", err)
				}
				say("S %d %s\n", id, end.State)
				switch end.State {
				case engine.JobQueued:
					queued = append(queued, id)
				case engine.JobDone:
					if err := db.Named(id); err != nil {
						return fail("named", err)
					}
				}
			case k == 6: // pause or cancel a queued or active job
				from := &queued
				if rnd.IntN(3) == 0 {
					from = &active
				}
				id, ok := take(from)
				if !ok {
					continue
				}
				to := engine.JobPaused
				if rnd.IntN(2) == 0 {
					to = engine.JobCancelled
				}
				say("I %d %s\n", id, to)
				changed, err := db.SetState(bg, []int64{id}, []engine.JobState{engine.JobQueued, engine.JobActive}, to)
				if err != nil || len(changed) != 1 {
					return fail("set state", fmt.Errorf("%v, changed %v", err, changed))
				}
				say("S %d %s\n", id, to)
				if to == engine.JobPaused {
					paused = append(paused, id)
				}
			default: // resume a paused job
				id, ok := take(&paused)
				if !ok {
					continue
				}
				say("I %d queued\n", id)
				changed, err := db.SetState(bg, []int64{id}, []engine.JobState{engine.JobPaused}, engine.JobQueued)
				if err != nil || len(changed) != 1 {
					return fail("resume", fmt.Errorf("%v, changed %v", err, changed))
				}
				say("S %d queued\n", id)
				queued = append(queued, id)
			}
		}
	}
}

// crashHost is the host of the n-th URL of a round.
func crashHost(n int) string { return fmt.Sprintf("h%d.example", n%40) }

// crashURL is the n-th URL the child of round enqueues.
func crashURL(round, n int) string {
	return fmt.Sprintf("https://h%d.example/r%d/%d", n%40, round, n)
}

// crashModel is what the parent knows from the child's acknowledgements, over all rounds.
type crashModel struct {
	urls    map[string]int64          // acknowledged URL → id
	acked   map[int64]engine.JobState // last acknowledged state
	pending map[int64]engine.JobState // asked for, not acknowledged: may or may not have happened
	pastes  [][3]int                  // big pastes asked for: round, first n, count
	round   int
}

func (m *crashModel) read(t *testing.T, line string) {
	f := strings.Fields(line)
	if len(f) != 3 {
		return // "ready"
	}
	if f[0] == "B" {
		first, err1 := strconv.Atoi(f[1])
		count, err2 := strconv.Atoi(f[2])
		require.NoError(t, errors.Join(err1, err2), line)
		m.pastes = append(m.pastes, [3]int{m.round, first, count})
		return
	}
	id, err := strconv.ParseInt(f[1], 10, 64)
	require.NoError(t, err, line)
	switch f[0] {
	case "Q":
		_, seen := m.urls[f[2]]
		require.False(t, seen, "URL acknowledged twice as new: %s", f[2])
		m.urls[f[2]] = id
		m.acked[id] = engine.JobQueued
	case "I":
		m.pending[id] = engine.JobState(f[2])
	case "S":
		m.acked[id] = engine.JobState(f[2])
		delete(m.pending, id)
	}
}

// afterCrash is the state a job must have after Open recovered the database.
func afterCrash(s engine.JobState) engine.JobState {
	if s == engine.JobActive {
		return engine.JobQueued
	}
	return s
}

// TestCrash_S2_KillNineKeepsAcknowledged kills a busy child Heed with SIGKILL at random moments,
// 20 times over one database, and after each kill checks that the database passes
// integrity_check, every acknowledged URL is there exactly once with its id, every job is in its
// acknowledged state (or the one it was being moved to), jobs left active are queued again with
// their partial file kept and their cut-off attempt given back (S2, G42), a paste is all there or
// not at all (RELIABILITY 31), and every host's counts are its jobs counted.
func TestCrash_S2_KillNineKeepsAcknowledged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heed.db")
	m := &crashModel{urls: map[string]int64{}, acked: map[int64]engine.JobState{}, pending: map[int64]engine.JobState{}}
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var recoveredTotal int64
	var pastesKept int
	const rounds = 20
	for round := range rounds {
		killAfter := time.Duration(5+rnd.IntN(150)) * time.Millisecond
		if round%4 == 1 {
			// A round that begins with a big paste, killed at any moment of it: before, during or
			// after its commit, so that both halves of all-or-nothing are seen.
			killAfter = time.Duration(5+rnd.IntN(800)) * time.Millisecond
		}
		m.round = round
		runAndKill(t, path, round, killAfter, m)

		// What the crash left active, read without Open (read-only: nothing is checkpointed).
		type left struct {
			part     string
			bytes    int64
			attempts int
		}
		active := map[int64]left{}
		raw := rawOpenRO(t, path)
		rows, err := raw.Query(`SELECT id, part, bytes, attempts FROM jobs WHERE state = 'active'`)
		require.NoError(t, err)
		for rows.Next() {
			var id int64
			var l left
			require.NoError(t, rows.Scan(&id, &l.part, &l.bytes, &l.attempts))
			active[id] = l
		}
		require.NoError(t, rows.Err())
		require.NoError(t, raw.Close())

		db, err := Open(path)
		require.NoError(t, err, "round %d", round)
		var ok string
		require.NoError(t, db.r.QueryRow(`PRAGMA integrity_check`).Scan(&ok))
		assert.Equal(t, "ok", ok, "round %d", round)
		assert.Equal(t, int64(len(active)), db.Recovered(), "round %d: every active job is recovered", round)
		recoveredTotal += db.Recovered()
		assertCounts(t, db, "round %d: the hosts rows count the jobs", round)
		var keys, distinct int
		require.NoError(t, db.r.QueryRow(`SELECT count(*), count(DISTINCT key) FROM jobs`).Scan(&keys, &distinct))
		assert.Equal(t, keys, distinct, "round %d: no key stored twice", round)

		got := map[string]int64{}
		states := map[int64]engine.JobState{}
		var dups, stillActive int
		eachJob(t, db, func(j engine.Job) {
			if _, seen := got[j.URL]; seen {
				dups++
			}
			got[j.URL] = j.ID
			states[j.ID] = j.State
			if j.State == engine.JobActive {
				stillActive++
			}
			if l, ok := active[j.ID]; ok {
				assert.Equal(t, engine.JobQueued, j.State, "round %d: job %d left active is queued", round, j.ID)
				assert.Equal(t, l.part, j.Part, "round %d: job %d keeps its .part", round, j.ID)
				assert.Equal(t, l.bytes, j.Bytes, "round %d: job %d keeps its bytes", round, j.ID)
				assert.Equal(t, l.attempts-1, j.Attempts, "round %d: job %d gets its attempt back", round, j.ID)
				assert.Equal(t, "interrupted", j.LastError, "round %d: job %d", round, j.ID)
			}
		})
		assert.Zero(t, dups, "round %d: no URL stored twice", round)
		assert.Zero(t, stillActive, "round %d: no job is active after Open", round)

		var missing, wrongID, wrongState []string
		for u, id := range m.urls {
			gid, ok := got[u]
			switch {
			case !ok:
				missing = append(missing, u)
			case gid != id:
				wrongID = append(wrongID, fmt.Sprintf("%s: %d, acknowledged %d", u, gid, id))
			}
		}
		for id, s := range m.acked {
			have := states[id]
			p, isPending := m.pending[id]
			if have != afterCrash(s) && !(isPending && have == afterCrash(p)) {
				wrongState = append(wrongState, fmt.Sprintf("job %d is %s, acknowledged %s (pending %q)", id, have, s, p))
			}
			m.acked[id] = have // what happened to a pending change is now known
		}
		clear(m.pending)
		for _, p := range m.pastes { // a paste is one transaction: all of it or none
			present := 0
			for n := p[1]; n < p[1]+p[2]; n++ {
				if _, ok := got[crashURL(p[0], n)]; ok {
					present++
				}
			}
			assert.True(t, present == 0 || present == p[2], "round %d: paste of %d has %d URLs", p[0], p[2], present)
			if present == p[2] {
				pastesKept++
			}
		}
		m.pastes = nil
		assert.Empty(t, missing, "round %d: acknowledged URLs lost", round)
		assert.Empty(t, wrongID, "round %d", round)
		assert.Empty(t, wrongState, "round %d", round)
		require.NoError(t, db.Close())
	}
	require.NotEmpty(t, m.urls, "the children acknowledged URLs")
	assert.Positive(t, recoveredTotal, "some kills hit jobs while active")
	if pastesKept == 0 {
		t.Logf("no big paste was committed before its kill: only the none half of all-or-nothing was seen")
	}
	t.Logf("%d rounds, %d URLs acknowledged, %d active jobs recovered, %d of %d big pastes committed",
		rounds, len(m.urls), recoveredTotal, pastesKept, rounds/2)
}

// runAndKill runs childCrash for one round and SIGKILLs it killAfter after it is ready, reading
// every line it printed into m.
func runAndKill(t *testing.T, path string, round int, killAfter time.Duration, m *crashModel) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"=crash", envDB+"="+path, envRound+"="+strconv.Itoa(round))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())

	br := bufio.NewReader(out)
	var timer *time.Timer
	var lines []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			break // a line without its newline was cut by the kill: it was never acknowledged
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "ready" && timer == nil {
			timer = time.AfterFunc(killAfter, func() { cmd.Process.Kill() })
		}
		lines = append(lines, line)
	}
	err = cmd.Wait()
	var ee *exec.ExitError
	killed := errors.As(err, &ee) && !ee.Exited()
	require.True(t, killed, "round %d: the child must die by the kill, not on its own: %v\n%s", round, err, stderr.String())
	for _, l := range lines {
		m.read(t, l)
	}
}
