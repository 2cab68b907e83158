package storetest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"heed/engine"
)

// EnvRound is the environment variable Crash sets on each child it starts: the round, which
// seeds the child's choices and names its URLs. CrashChild reads it.
const EnvRound = "HEED_STORETEST_CRASH_ROUND"

// CrashOpener is what Crash needs of a store: where a fresh one is, how to start a child process
// that runs CrashChild on it, and how to open it again after the kill.
type CrashOpener struct {
	// DSN returns where a fresh, empty store is for test t: a file path, a database URL. Every
	// round's child, and the checks after each kill, open that one store in turn.
	DSN func(t *testing.T) string
	// Child returns the command, not yet started, of a process that opens the store at dsn and
	// runs CrashChild on it: usually the test binary itself (os.Args[0] with -test.run=^$ and an
	// environment variable its TestMain looks for). Crash adds EnvRound to its environment (to
	// os.Environ() when Env is nil) and sets its Stdout and Stderr.
	Child func(t *testing.T, dsn string) *exec.Cmd
	// Open opens the store at dsn as the next start of Heed would, after a kill -9: recovering
	// what the kill left (S2). It fails t itself when it cannot.
	Open func(t *testing.T, dsn string) engine.Store
	// Close closes a store Open returned.
	Close func(engine.Store) error

	// Left, when set, reads the store at dsn as the kill left it, before Open, without changing
	// it, and returns the jobs it finds active: Crash then checks that each is queued again after
	// Open with exactly its part and bytes, and its cut-off attempt given back. Without it, Crash
	// checks that of the jobs the child's acknowledgements say were active.
	Left func(t *testing.T, dsn string) map[int64]Left
	// Check, when set, makes the store's own checks after each round on the store Open returned
	// (SQLite: PRAGMA integrity_check, that Open recovered as many jobs as it found active); left
	// is what Left returned (nil without Left).
	Check func(t *testing.T, s engine.Store, round int, left map[int64]Left)
	// Rounds is how many times a child is killed; 0 means 20.
	Rounds int
}

// Left is what a kill left of a job it caught active.
type Left struct {
	Part     string
	Bytes    int64
	Attempts int
}

// CrashChild plays a busy Heed on the store open returns until it is killed, and returns an exit
// status only when something went wrong (3: the store did not open; 1: a call failed or reported
// what it must not). It creates a crawl, enqueues batches of URLs and moves jobs through their
// states as the engine does, finishing the crawl's pages with the links they found, printing to
// stdout:
//
//	Q <id> <url>                      after a call acknowledged url as a new job with id
//	I <id> <state>                    before asking for a transition of job id to state
//	S <id> <state>                    after the transition was acknowledged
//	S <id> active <attempts> <bytes>  the same for a start, with what it counted and the bytes kept
//	N <id> <bytes>                    after a Note of bytes for job id returned (it rides a later commit)
//	B <n> <count>                     before enqueueing URLs n … n+count-1 of this round in one call
//	L <id> <n> <count>                before finishing crawl page id done, with links n … n+count-1
//
// Each call's lines are written with one write, after the call returned.
func CrashChild(open func() (engine.Store, error)) int {
	round, err := strconv.Atoi(os.Getenv(EnvRound))
	if err != nil {
		fmt.Fprintf(os.Stderr, "storetest: %s: %v\n", EnvRound, err)
		return 2
	}
	s, err := open()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 3
	}
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		return 1
	}
	rnd := rand.New(rand.NewPCG(uint64(round), 42))
	var queued, active, paused []int64
	var crawlQueued []int64 // the crawl's queued pages, started as often as all other jobs together
	var acked []string
	type page struct {
		url   string
		depth int
	}
	pages := map[int64]page{} // the crawl's jobs
	requeue := func(id int64) {
		if _, ok := pages[id]; ok {
			crawlQueued = append(crawlQueued, id)
		} else {
			queued = append(queued, id)
		}
	}
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

	// A crawl of this round, whose pages find links (W8).
	seeds := make([]engine.NewJob, 3)
	c := engine.Crawl{Scope: "host", Depth: 1000, State: engine.CrawlRunning}
	for i := range seeds {
		u := crashURL(round, n)
		seeds[i] = engine.NewJob{URL: u, Key: u, Host: crashHost(n)}
		c.Seeds = append(c.Seeds, u)
		n++
	}
	crawlID, res, err := s.CreateCrawl(bg, c, seeds)
	if err != nil {
		return fail("create crawl", err)
	}
	var buf bytes.Buffer
	for i, it := range res {
		if it.Duplicate || it.ID == 0 {
			return fail("create crawl", fmt.Errorf("seed %d: %+v", i, it))
		}
		fmt.Fprintf(&buf, "Q %d %s\n", it.ID, seeds[i].URL)
		pages[it.ID] = page{seeds[i].URL, 0}
		requeue(it.ID)
		acked = append(acked, seeds[i].URL)
	}
	buf.WriteString("ready\n")
	os.Stdout.Write(buf.Bytes())

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
		res, err := s.Enqueue(bg, jobs, noAgain)
		if err != nil {
			return fail("enqueue", err)
		}
		buf.Reset()
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
				from := &queued
				if len(crawlQueued) > 0 && rnd.IntN(2) == 0 {
					from = &crawlQueued
				}
				id, ok := take(from)
				if !ok {
					continue
				}
				say("I %d active\n", id)
				job, err := s.Start(bg, id, fmt.Sprintf("%d.part", id))
				if err != nil {
					return fail("start", err)
				}
				say("S %d active %d %d\n", id, job.Attempts, job.Bytes)
				active = append(active, id)
				noted := int64(rnd.IntN(1 << 20))
				err = s.Note(id, engine.Resume{Part: job.Part, Bytes: noted, Size: -1, ETag: `"e"`})
				if err != nil {
					return fail("note", err)
				}
				say("N %d %d\n", id, noted)
				err = s.RecordAttempt(engine.Attempt{JobID: id, URL: "u", Host: "h", Attempt: job.Attempts,
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
					if p, ok := pages[id]; ok { // a crawl's page: its links go with its done (W8)
						count := 1 + rnd.IntN(12)
						say("L %d %d %d\n", id, n, count)
						for range count {
							u := crashURL(round, n)
							end.Found = append(end.Found, engine.NewJob{URL: u, Key: u, Host: crashHost(n),
								CrawlID: crawlID, Depth: p.depth + 1, FoundOn: p.url})
							n++
						}
						end.OutOfScope = int64(rnd.IntN(3))
					}
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
				got, err := s.Finish(bg, end)
				if err != nil {
					return fail("finish", err)
				}
				if len(got) != len(end.Found) {
					return fail("finish", fmt.Errorf("%d reports of %d links", len(got), len(end.Found)))
				}
				buf.Reset()
				fmt.Fprintf(&buf, "S %d %s\n", id, end.State)
				for i, it := range got {
					if it.Duplicate || it.ID == 0 || it.State != engine.JobQueued {
						return fail("finish", fmt.Errorf("link %d: %+v", i, it))
					}
					u := end.Found[i].URL
					fmt.Fprintf(&buf, "Q %d %s\n", it.ID, u)
					pages[it.ID] = page{u, end.Found[i].Depth}
					requeue(it.ID)
					acked = append(acked, u)
				}
				os.Stdout.Write(buf.Bytes())
				switch end.State {
				case engine.JobQueued:
					requeue(id)
				case engine.JobDone:
					if err := s.Named(id); err != nil {
						return fail("named", err)
					}
				}
			case k == 6: // pause or cancel a queued or active job
				from := &queued
				switch rnd.IntN(6) {
				case 0, 1:
					from = &active
				case 2:
					from = &crawlQueued
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
				changed, err := s.SetState(bg, []int64{id}, []engine.JobState{engine.JobQueued, engine.JobActive}, to)
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
				changed, err := s.SetState(bg, []int64{id}, []engine.JobState{engine.JobPaused}, engine.JobQueued)
				if err != nil || len(changed) != 1 {
					return fail("resume", fmt.Errorf("%v, changed %v", err, changed))
				}
				say("S %d queued\n", id)
				requeue(id)
			}
		}
	}
}

// crashHost is the host of the n-th URL of a round.
func crashHost(n int) string { return fmt.Sprintf("h%d.example", n%40) }

// crashURL is the n-th URL the child of round enqueues or finds.
func crashURL(round, n int) string {
	return fmt.Sprintf("https://h%d.example/r%d/%d", n%40, round, n)
}

// span is URLs n … n+count-1 of a round, which one call asked to store.
type span struct{ round, first, count int }

// started is what a start acknowledged of a job: the attempts it counted, the bytes the job had,
// and the bytes a later Note gave it (which may or may not have been committed at a kill).
type started struct {
	attempts     int
	bytes, noted int64
	hasNote      bool
}

// crashModel is what the parent knows from the child's acknowledgements, over all rounds.
type crashModel struct {
	urls    map[string]int64          // acknowledged URL → id
	acked   map[int64]engine.JobState // last acknowledged state
	pending map[int64]engine.JobState // asked for, not acknowledged: may or may not have happened
	started map[int64]started         // acknowledged active and not since acknowledged otherwise
	pastes  []span                    // big pastes asked for
	links   map[int64]span            // crawl pages asked to finish done with links, by page
	round   int
}

func (m *crashModel) read(t *testing.T, line string) {
	f := strings.Fields(line)
	if len(f) < 3 {
		return // "ready"
	}
	nums := make([]int64, 0, 4)
	for _, x := range f[1:] {
		if v, err := strconv.ParseInt(x, 10, 64); err == nil {
			nums = append(nums, v)
		}
	}
	switch {
	case f[0] == "B" && len(nums) == 2:
		m.pastes = append(m.pastes, span{m.round, int(nums[0]), int(nums[1])})
	case f[0] == "L" && len(nums) == 3:
		m.links[nums[0]] = span{m.round, int(nums[1]), int(nums[2])}
	case f[0] == "N" && len(nums) == 2:
		if st, ok := m.started[nums[0]]; ok {
			st.noted, st.hasNote = nums[1], true
			m.started[nums[0]] = st
		}
	case f[0] == "Q" && len(nums) >= 1:
		_, seen := m.urls[f[2]]
		require.False(t, seen, "URL acknowledged twice as new: %s", f[2])
		m.urls[f[2]] = nums[0]
		m.acked[nums[0]] = engine.JobQueued
	case f[0] == "I" && len(nums) == 1:
		m.pending[nums[0]] = engine.JobState(f[2])
	case f[0] == "S" && len(nums) >= 1:
		id := nums[0]
		m.acked[id] = engine.JobState(f[2])
		delete(m.pending, id)
		delete(m.started, id)
		if f[2] == string(engine.JobActive) {
			require.Len(t, nums, 3, line)
			m.started[id] = started{attempts: int(nums[1]), bytes: nums[2]}
		}
	case len(f[0]) == 1 && strings.Contains("BLNQIS", f[0]):
		require.Failf(t, "the child printed a line it must not", "%q", line)
	}
}

// afterCrash is the state a job must have after the store was opened again.
func afterCrash(s engine.JobState) engine.JobState {
	if s == engine.JobActive {
		return engine.JobQueued
	}
	return s
}

// Crash kills a busy child (CrashChild) with SIGKILL at random moments, 20 times over one store
// (S2), and after each kill opens the store again and checks that every acknowledged URL is there
// exactly once with its id (J2), every job is in its acknowledged state (or the one it was being
// moved to), no job is left active and those the kill caught active are queued again with their
// part kept and their cut-off attempt given back (S2, G42), a paste is all there or not at all
// (RELIABILITY 31), a crawl page's links are there exactly when the page is done (W8), each
// crawl's counts, pages and bytes are its jobs', and every host's counts are its jobs counted
// (U1) — then runs o.Check.
func Crash(t *testing.T, o CrashOpener) {
	require.NotNil(t, o.DSN, "CrashOpener.DSN")
	require.NotNil(t, o.Child, "CrashOpener.Child")
	require.NotNil(t, o.Open, "CrashOpener.Open")
	require.NotNil(t, o.Close, "CrashOpener.Close")
	rounds := o.Rounds
	if rounds == 0 {
		rounds = 20
	}
	dsn := o.DSN(t)
	m := &crashModel{urls: map[string]int64{}, acked: map[int64]engine.JobState{}, pending: map[int64]engine.JobState{},
		started: map[int64]started{}, links: map[int64]span{}}
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	var caught, pastesKept, pagesDone int
	for round := range rounds {
		killAfter := time.Duration(5+rnd.IntN(150)) * time.Millisecond
		if round%4 == 1 {
			// A round that begins with a big paste, killed at any moment of it: before, during or
			// after its commit, so that both halves of all-or-nothing are seen.
			killAfter = time.Duration(5+rnd.IntN(800)) * time.Millisecond
		}
		m.round = round
		runAndKill(t, o.Child(t, dsn), round, killAfter, m)

		var left map[int64]Left
		if o.Left != nil {
			left = o.Left(t, dsn)
		}
		s := o.Open(t, dsn)
		require.NotNil(t, s, "round %d: Open returned no store", round)
		kept, done := checkAfterCrash(t, s, m, round, left)
		caught += len(m.started)
		pastesKept += kept
		pagesDone += done
		clear(m.started)
		m.pastes = nil
		clear(m.links)
		if o.Check != nil {
			o.Check(t, s, round, left)
		}
		require.NoError(t, o.Close(s), "round %d", round)
	}
	require.NotEmpty(t, m.urls, "the children acknowledged URLs")
	assert.Positive(t, caught, "some kills hit jobs while active")
	if pastesKept == 0 {
		t.Logf("no big paste was committed before its kill: only the none half of all-or-nothing was seen")
	}
	t.Logf("%d rounds, %d URLs acknowledged, %d jobs caught active, %d of %d big pastes committed, %d crawl pages done with their links",
		rounds, len(m.urls), caught, pastesKept, rounds/2, pagesDone)
}

// present counts the URLs of p that have a job, by got (URL → id).
func present(got map[string]int64, p span) int {
	n := 0
	for i := p.first; i < p.first+p.count; i++ {
		if _, ok := got[crashURL(p.round, i)]; ok {
			n++
		}
	}
	return n
}

// checkAfterCrash checks the store s, opened after round's kill, against m, and updates m to what
// happened to the transitions that were pending. It returns how many big pastes and how many crawl
// pages with links of the round were committed.
func checkAfterCrash(t *testing.T, s engine.Store, m *crashModel, round int, left map[int64]Left) (pastesKept, pagesDone int) {
	t.Helper()
	got := map[string]int64{}
	jobs := map[int64]engine.Job{}
	type crawlJobs struct {
		counts       engine.Counts
		pages, bytes int64
	}
	crawls := map[int64]crawlJobs{}
	byHost := map[string]engine.Counts{}
	var dups, stillActive int
	eachJob(t, s, func(j engine.Job) {
		hc := byHost[j.Host]
		hc.Add(one(t, j.State))
		byHost[j.Host] = hc
		if _, seen := got[j.URL]; seen {
			dups++
		}
		got[j.URL] = j.ID
		jobs[j.ID] = j
		if j.State == engine.JobActive {
			stillActive++
		}
		if l, ok := left[j.ID]; ok {
			assert.Equal(t, engine.JobQueued, j.State, "round %d: job %d left active is queued", round, j.ID)
			assert.Equal(t, l.Part, j.Part, "round %d: job %d keeps its .part", round, j.ID)
			assert.Equal(t, l.Bytes, j.Bytes, "round %d: job %d keeps its bytes", round, j.ID)
			assert.Equal(t, l.Attempts-1, j.Attempts, "round %d: job %d gets its attempt back", round, j.ID)
			assert.Equal(t, "interrupted", j.LastError, "round %d: job %d", round, j.ID)
		}
		if j.CrawlID != 0 {
			c := crawls[j.CrawlID]
			c.counts.Add(one(t, j.State))
			c.pages++
			if j.State == engine.JobDone {
				c.bytes += j.Bytes
			}
			crawls[j.CrawlID] = c
		}
	})
	assert.Zero(t, dups, "round %d: no URL stored twice", round)
	assert.Zero(t, stillActive, "round %d: no job is active after Open", round)
	assert.Equal(t, byHost, hostCounts(t, s), "round %d: the hosts count the jobs", round)

	// The jobs the child's acknowledgements say the kill caught active.
	for id, st := range m.started {
		if _, ok := m.pending[id]; ok {
			continue // on its way elsewhere: the state check below covers it
		}
		j, ok := jobs[id]
		if !assert.True(t, ok, "round %d: job %d is there", round, id) {
			continue
		}
		assert.Equal(t, engine.JobQueued, j.State, "round %d: job %d caught active is queued", round, id)
		assert.Equal(t, fmt.Sprintf("%d.part", id), j.Part, "round %d: job %d keeps its .part", round, id)
		if st.hasNote && j.Bytes != st.bytes {
			assert.Equal(t, st.noted, j.Bytes, "round %d: job %d keeps its bytes, noted or not", round, id)
		} else {
			assert.Equal(t, st.bytes, j.Bytes, "round %d: job %d keeps its bytes", round, id)
		}
		assert.Equal(t, st.attempts-1, j.Attempts, "round %d: job %d gets its attempt back (G42)", round, id)
		assert.Equal(t, "interrupted", j.LastError, "round %d: job %d", round, id)
	}

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
	for id, st := range m.acked {
		have := jobs[id].State
		p, isPending := m.pending[id]
		if have != afterCrash(st) && !(isPending && have == afterCrash(p)) {
			wrongState = append(wrongState, fmt.Sprintf("job %d is %s, acknowledged %s (pending %q)", id, have, st, p))
		}
		m.acked[id] = have // what happened to a pending change is now known
	}
	clear(m.pending)
	for _, p := range m.pastes { // a paste is one transaction: all of it or none
		n := present(got, p)
		assert.True(t, n == 0 || n == p.count, "round %d: paste of %d has %d URLs", p.round, p.count, n)
		if n == p.count {
			pastesKept++
		}
	}
	for page, p := range m.links { // W8: a page's links are stored in the commit of its done
		n := present(got, p)
		done := jobs[page].State == engine.JobDone
		assert.True(t, n == 0 && !done || n == p.count && done,
			"round %d: page %d is %s with %d of its %d links", round, page, jobs[page].State, n, p.count)
		if done {
			pagesDone++
		}
	}
	assert.Empty(t, missing, "round %d: acknowledged URLs lost", round)
	assert.Empty(t, wrongID, "round %d", round)
	assert.Empty(t, wrongState, "round %d", round)

	cs, err := s.Crawls(bg)
	require.NoError(t, err)
	require.Len(t, cs, round+1, "round %d: a crawl a round", round)
	for _, c := range cs {
		want := crawls[c.ID]
		assert.Equal(t, want.counts, c.Counts, "round %d: crawl %d counts its jobs", round, c.ID)
		assert.Equal(t, want.pages, c.Pages, "round %d: crawl %d counts the jobs it created", round, c.ID)
		assert.Equal(t, want.bytes, c.Bytes, "round %d: crawl %d sums its done pages' bytes", round, c.ID)
	}
	return pastesKept, pagesDone
}

// runAndKill starts cmd, the child of round, and SIGKILLs it killAfter after it is ready, reading
// every line it printed into m.
func runAndKill(t *testing.T, cmd *exec.Cmd, round int, killAfter time.Duration, m *crashModel) {
	t.Helper()
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, EnvRound+"="+strconv.Itoa(round))
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
