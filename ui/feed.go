package ui

import (
	"sync"

	"heed/engine"
)

// feedCap bounds what a Feed keeps between two reads, so an engine that
// runs without a window reading the feed never grows it without end.
const feedCap = 4096

// Feed carries the engine's callbacks to the window. The engine is built
// before the window, so main creates a Feed first, hands its methods to
// the engine, and the Feed to the window:
//
//	feed := ui.NewFeed()
//	eng, _ := engine.New(ctx, store, engine.Options{OnJob: feed.Job, OnEvent: feed.Event, …})
//	w := ui.New(a, eng, ui.Options{Feed: feed, …})
//
// Job and Event only append to a short buffer under a mutex, so they are
// quick enough for the engine's goroutines; the window's refresh loop
// drains the buffer once per tick (one coalesced fyne.Do, never one per
// callback). Without a Feed the window still works: the per-host chart
// then counts only requests it saw in flight.
type Feed struct {
	mu     sync.Mutex
	ends   []engine.JobEnd
	events []engine.Event
}

// NewFeed returns an empty Feed.
func NewFeed() *Feed { return &Feed{} }

// Job records how an attempt ended; use it as engine.Options.OnJob.
func (f *Feed) Job(e engine.JobEnd) {
	f.mu.Lock()
	if len(f.ends) < feedCap {
		f.ends = append(f.ends, e)
	}
	f.mu.Unlock()
}

// Event records a host event; use it as engine.Options.OnEvent.
func (f *Feed) Event(e engine.Event) {
	f.mu.Lock()
	if len(f.events) < feedCap {
		f.events = append(f.events, e)
	}
	f.mu.Unlock()
}

// drain returns and forgets what arrived since the last drain. A nil Feed
// has nothing.
func (f *Feed) drain() ([]engine.JobEnd, []engine.Event) {
	if f == nil {
		return nil, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ends, events := f.ends, f.events
	f.ends, f.events = nil, nil
	return ends, events
}
