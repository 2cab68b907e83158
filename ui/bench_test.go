package ui

import (
	"fmt"
	"testing"
	"time"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/test"

	"heed/engine"
)

// benchHosts returns n synthetic host snapshots in mixed states.
func benchHosts(n int) []engine.HostSnapshot {
	s := make([]engine.HostSnapshot, n)
	for i := range s {
		s[i] = engine.HostSnapshot{Host: fmt.Sprintf("host-%05d.example", i), Tokens: float64(i % 5), RatePerMin: 60,
			Burst: 4, MaxInflight: 1, Waiting: engine.WaitToken}
		switch i % 7 {
		case 1:
			s[i].Level, s[i].GateIn, s[i].Waiting = 2, 20*time.Second, engine.WaitGate
		case 2:
			s[i].Breaker, s[i].HalfOpenIn = engine.Open, 15*time.Second
		case 3:
			s[i].Paused, s[i].Waiting = true, engine.WaitPaused
		case 4:
			s[i].Inflight = 1
		}
	}
	return s
}

// BenchmarkHostsRefresh is one refresh of the hosts table with 10,000
// hosts of which a tenth changed since the previous tick: the diff, the
// chart rings, the sort (off the Fyne thread in the app) and applying it
// to the table on screen (on the Fyne thread).
func BenchmarkHostsRefresh(b *testing.B) {
	a := test.NewTempApp(b)
	w := New(a, nil, Options{})
	w.win.Resize(fyne.NewSize(1240, 760))
	w.win.Show()
	const n = 10000
	bufs := [2][]engine.HostSnapshot{benchHosts(n), benchHosts(n)}
	now := time.Now()
	w.apply(w.poll.build(bufs[0], now, nil, false, nil, nil, nil))
	if len(w.hosts.bound) == 0 {
		b.Fatal("no cells on screen")
	}
	i := 0
	for b.Loop() {
		b.StopTimer()
		prev, next := bufs[i%2], bufs[(i+1)%2]
		copy(next, prev)
		for k := i % 10; k < n; k += 10 {
			next[k].Tokens = float64((int(next[k].Tokens) + 1) % 5)
			next[k].GateIn += time.Second
		}
		now = now.Add(tickEvery)
		i++
		b.StartTimer()
		w.apply(w.poll.build(next, now, nil, false, nil, nil, nil))
	}
}

// BenchmarkHostsTick is a whole tick over a real engine with 10,000 hosts
// and 100,000 queued jobs: the snapshot, the update and applying it.
func BenchmarkHostsTick(b *testing.B) {
	a := test.NewTempApp(b)
	core := engine.NewCore(engine.Config{})
	now := time.Now()
	for i := range 100000 {
		core.Add(int64(i+1), fmt.Sprintf("host-%05d.example", i%10000), now)
	}
	w := New(a, nil, Options{})
	w.win.Resize(fyne.NewSize(1240, 760))
	w.win.Show()
	var bufs [2][]engine.HostSnapshot
	k := 0
	for b.Loop() {
		now = now.Add(tickEvery)
		bufs[k] = core.SnapshotInto(bufs[k], now)
		u := w.poll.build(bufs[k], now, nil, false, nil, nil, nil)
		u.stats = core.Stats()
		w.apply(u)
		k ^= 1
	}
}
