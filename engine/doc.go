// Package engine is Heed's politeness core and download loop: it decides
// which download may start when, so that every host is fetched politely
// (SPEC §2–§5), runs the downloads, and records every step in a Store.
//
// The Core keeps, per host key (see HostKey), a governor — token bucket
// (golang.org/x/time/rate, explicit-time methods only), in-flight cap,
// backoff gate with full jitter, spacing jitter, Retry-After floor, decay
// and pause — a three-state circuit breaker, and a short window of the
// host's next queued jobs, refilled from the Store (the queue itself lives
// there, §11). It never sleeps and starts no goroutines: the Engine asks
// Core.Next which job may start at an instant, runs the request, reports it
// with Core.Observe, and sleeps until the wake instant Next returned or
// until Core.Changed fires.
//
// One concern per file, with its tests beside it:
//
//	types.go       the records the engine and its Store share (jobs, history, counts)
//	store.go       Store and Reader: what the engine keeps durable, implemented by storage
//	hostkey.go     host keys (SPEC §1)
//	tunables.go    Tunables, defaults, bounds (§2–§4)
//	retryafter.go  Retry-After parsing (G8)
//	governor.go    a host's governor (G1–G7, G9)
//	breaker.go     circuit breaker (B1–B6)
//	retry.go       retry policy and error classes (R1–R5)
//	core.go        Core: the host heap, dispatch and results (L1–L3)
//	frontier.go    each host's window of queued jobs, refilled from storage (Q1, Q2)
//	control.go     the core's live controls: pause, retune, breaker actions, limits
//	events.go      a host's timeline (S4)
//	snapshot.go    what the window shows (G11)
//	persist.go     host state across restarts (G10, B6)
//	engine.go      Engine: options, New, what a run holds
//	run.go         the run loop and the refiller
//	attempt.go     one attempt of a job: its start, its exchanges, redirect hops (J3, N2)
//	finish.go      how an attempt ends: done and named, retried, failed (F3, F4, S2)
//	add.go         adding URLs, as they are read (J1, J2)
//	commands.go    what a person does to jobs and hosts, persisted before it returns
//	settings.go    saved defaults and global limits (U7, L2)
//	export.go      jobs and history as JSON lines and CSV (SPEC §9, U6)
//
// The fetcher lives in engine/fetch; the loopback demo hosts used by tests
// and `heed demo` in engine/demo.
package engine
