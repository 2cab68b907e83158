// Package engine is Heed's politeness core: it decides which download may
// start when, so that every host is fetched politely (SPEC §2–§5).
//
// The Core keeps, per host key (see HostKey), a governor — token bucket
// (golang.org/x/time/rate, explicit-time methods only), in-flight cap,
// backoff gate with full jitter, spacing jitter, Retry-After floor, decay
// and pause — and a three-state circuit breaker, plus the per-job retry
// policy and the global concurrency and rate limits. It never sleeps and
// starts no goroutines: the engine loop asks Core.Next which job may start
// at an instant, runs the request, reports it with Core.Observe, and
// sleeps until the wake instant Next returned or until Core.Changed fires.
//
// One rule group per file, with its tests beside it:
//
//	hostkey.go     host keys (SPEC §1)
//	tunables.go    Tunables, defaults, bounds (§2–§4)
//	retryafter.go  Retry-After parsing (G8)
//	governor.go    per-host governor (G1–G11)
//	breaker.go     circuit breaker (B1–B6)
//	retry.go       retry policy and error classes (R1–R5)
//	scheduler.go   Core: jobs, dispatch, results, controls (L1–L3)
//	snapshot.go    what the UI shows (G11)
//	persist.go     export and restore across restarts (G10, B6, S4)
//	engine.go      Engine: the download loop over Core, fetch and a Store (§5, §6)
//	store.go       Store: what the engine keeps durable, implemented by storage
//
// The fetcher lives in engine/fetch; Engine maps its classes onto ErrClass.
// The loopback demo hosts used by tests and `heed demo` live in engine/demo.
package engine
