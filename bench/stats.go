package bench

import (
	"slices"
	"time"
)

// Median returns the median of xs (the mean of the middle two for an even
// count), or 0 for none. xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// Summary is the median of repeated runs of one tool on one case.
type Summary struct {
	Runs   int
	Wall   time.Duration // median wall time
	MinW   time.Duration // fastest run
	MaxW   time.Duration // slowest run
	CPU    time.Duration // median user+system CPU time
	MaxRSS int64         // median peak resident set, bytes
	Sync   time.Duration // median Measure.Sync
	// WallSync is the median of Wall+Sync: the time until the files were
	// on disk.
	WallSync time.Duration
	// Idle is the median of Measure.Idle over the runs where it is known,
	// -1 when it is known for none.
	Idle float64
}

// Summarize returns the medians of ms.
func Summarize(ms []Measure) Summary {
	var wall, cpu, rss, sync, wallSync, idle []float64
	s := Summary{Runs: len(ms), Idle: -1}
	for i, m := range ms {
		if m.Idle >= 0 {
			idle = append(idle, m.Idle)
		}
		wall = append(wall, float64(m.Wall))
		cpu = append(cpu, float64(m.User+m.Sys))
		rss = append(rss, float64(m.MaxRSS))
		sync = append(sync, float64(m.Sync))
		wallSync = append(wallSync, float64(m.Wall+m.Sync))
		if i == 0 || m.Wall < s.MinW {
			s.MinW = m.Wall
		}
		if m.Wall > s.MaxW {
			s.MaxW = m.Wall
		}
	}
	s.Wall = time.Duration(Median(wall))
	s.CPU = time.Duration(Median(cpu))
	s.MaxRSS = int64(Median(rss))
	s.Sync = time.Duration(Median(sync))
	s.WallSync = time.Duration(Median(wallSync))
	if len(idle) > 0 {
		s.Idle = Median(idle)
	}
	return s
}
