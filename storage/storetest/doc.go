// Package storetest is the engine's Store contract as tests: one suite, run against every
// implementation of engine.Store (the SQLite one in storage, the PostgreSQL one in
// storage/postgres), so that the engine may count on the same behaviour from each. It speaks to a
// store only through engine.Store and engine.Reader; what a store keeps in its own way (query
// plans, locks, migrations, its writer's batches, its error texts) is tested beside it.
//
// # Wiring
//
// A store package runs the suite with an Opener, and the crash test with a CrashOpener:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, storetest.Opener{
//			New: func(t *testing.T) (engine.Store, func() engine.Store) {
//				dsn := freshDatabase(t) // a file under t.TempDir(), a database of its own
//				open := func() engine.Store {
//					db, err := Open(dsn)
//					require.NoError(t, err)
//					return db
//				}
//				return open(), open
//			},
//			Close: func(s engine.Store) error { return s.(*DB).Close() },
//		})
//	}
//
// Run runs each contract test as a subtest named after the rules it holds
// (TestStore/Enqueue_J2_DuplicateInEveryState, TestStore/Finish_W8_W10_FoundLinksStoredWithTheDone
// …), each on a fresh store from New; a test that checks persistence closes the store with Close
// and opens it again with reopen. The suite closes every store it is given, once.
//
// The crash test kills a child process writing to the store with SIGKILL, 20 times, and checks
// the store after each kill. The child is the test binary itself: its TestMain, asked by an
// environment variable the store's test sets, calls CrashChild instead of running the tests:
//
//	func TestMain(m *testing.M) {
//		if dsn := os.Getenv("HEED_MYSTORE_CRASH"); dsn != "" {
//			os.Exit(storetest.CrashChild(func() (engine.Store, error) { return Open(dsn) }))
//		}
//		os.Exit(m.Run())
//	}
//
//	func TestCrash_S2_KillNineKeepsAcknowledged(t *testing.T) {
//		storetest.Crash(t, storetest.CrashOpener{
//			DSN: freshDatabase,
//			Child: func(t *testing.T, dsn string) *exec.Cmd {
//				cmd := exec.Command(os.Args[0], "-test.run=^$")
//				cmd.Env = append(os.Environ(), "HEED_MYSTORE_CRASH="+dsn)
//				return cmd
//			},
//			Open:  func(t *testing.T, dsn string) engine.Store { … },
//			Close: func(s engine.Store) error { return s.(*DB).Close() },
//		})
//	}
//
// CrashOpener.Left and CrashOpener.Check add what only the store can see: the jobs the kill left
// active, read before Open recovers them, and its own checks after each round (SQLite runs PRAGMA
// integrity_check there).
//
// # What a store must do to pass
//
// Beyond the doc comments of engine.Store and engine.Reader, the suite holds a store to these:
//
//   - Acknowledged is committed: a waited write (Enqueue, SetState, Start, SetPart, Finish, Rename,
//     CreateCrawl, SetCrawlState, SetSetting) is visible to the Reader when it returns. A queued
//     write (RecordAttempt, Note, Named, SaveHost, AppendEvent, SaveRobots) is committed by the next
//     waited write or by Flush. Flush and Close report, once, each queued write
//     that failed — among them a history row of a job that does not exist and a Note of a part
//     another job has — and the other writes queued with it are kept. Writes after Close fail.
//   - Strings are kept byte for byte, NUL and invalid UTF-8 included: URLs, keys and hosts (J1).
//     Times come back as the instant stored, to the nanosecond (the suite compares instants, not
//     locations). Times the store stamps itself — a new job's not-before, created and updated at, an
//     event without a time, a crawl's creation, a host's UpdatedAt — are the time of the call on
//     the process's clock: the suite checks them between time.Now() before and after it.
//   - Job ids grow with each new job (Enqueue's againBelow relies on it).
//   - Opening the store again after Close, or after kill -9, queues every job left active again
//     (S2), with its part, bytes and validators kept, its cut-off attempt given back (G42) and
//     LastError "interrupted"; Close leaves job states as they are, so the suite uses a Close with
//     jobs active as a crash.
//   - Hosts counts each host's jobs by state exactly as listing the jobs does, after every
//     transition (U1); SaveHost never sets the counts, and saves every field of engine.HostState
//     but those the store keeps (Counts, UpdatedAt, a fleet's Owner, LeaseUntil and Epoch). A new
//     field of engine.HostState fails the round-trip test until SaveHost and Hosts keep it.
//   - A crawl's links are stored in the commit of its page's done (W8), no more than its max pages
//     allow (a link over the budget is reported with ID 0), paused with a paused crawl, none with a
//     cancelled one, none for a page that is not done; a URL known already, in any crawl or paste,
//     is a duplicate (W3, J2). Crawls counts each crawl's jobs by state, the jobs it created, its
//     links out of scope and its done pages' bytes (W10).
//
// After each kill the crash test checks that every URL the child was told was queued is there
// once with its id, every job is in the state it was last acknowledged in (or the one it was being
// moved to), none is active, a paste of 10,000 URLs is all there or not at all, a crawl page's
// links are there exactly when the page is done, and each crawl's and host's counts are its jobs'.
package storetest
