//go:build unix

package storage

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"heed/engine"
)

// BenchmarkCrawledPage starts a crawled page and ends it done with the 18 links it leads to, as a
// crawl of 500 hosts × 50 pages does: 17 of them known already (the page's navigation, its
// siblings), one new. The links are committed with the page's done (W8).
func BenchmarkCrawledPage(b *testing.B) {
	const hosts, pages, links = 500, 50, 18
	db, err := Open(filepath.Join(b.TempDir(), "heed.db"))
	require.NoError(b, err)
	defer db.Close()
	page := func(h, p int) string { return fmt.Sprintf("http://h%03d.example/p/%02d.html", h, p) }
	var seeds []engine.NewJob
	for p := range pages {
		for h := range hosts {
			u := page(h, p)
			seeds = append(seeds, engine.NewJob{URL: u, Key: u, Host: fmt.Sprintf("h%03d.example", h)})
		}
	}
	crawl, queued, err := db.CreateCrawl(bg, engine.Crawl{Scope: "host", Depth: 5}, seeds)
	require.NoError(b, err)
	cpu0 := processCPU(b)
	i := 0
	for b.Loop() {
		if i == len(queued) {
			b.Fatalf("more than %d pages: give a smaller -benchtime", len(queued))
		}
		h, p := i%hosts, i/hosts
		found := make([]engine.NewJob, 0, links)
		for k := range links - 1 {
			u := page(h, (p+1+k)%pages)
			found = append(found, engine.NewJob{URL: u, Key: u, Host: seeds[i].Host, CrawlID: crawl, Depth: 1, FoundOn: seeds[i].URL})
		}
		u := fmt.Sprintf("http://h%03d.example/new/%d.html", h, i)
		found = append(found, engine.NewJob{URL: u, Key: u, Host: seeds[i].Host, CrawlID: crawl, Depth: 1, FoundOn: seeds[i].URL})
		_, err := db.Start(bg, queued[i].ID, "")
		require.NoError(b, err)
		got, err := db.Finish(bg, engine.End{JobID: queued[i].ID, State: engine.JobDone, File: "p.html", Status: 200, Found: found})
		require.NoError(b, err)
		if got[links-1].ID == 0 || !got[0].Duplicate {
			b.Fatalf("page %d: new link %+v, known link %+v", i, got[links-1], got[0])
		}
		i++
	}
	b.ReportMetric(float64((processCPU(b)-cpu0).Microseconds())/float64(i), "cpu-µs/page")
}

// processCPU is the user+system CPU time of this process so far: the writer's goroutine does the
// work, so the wall time of a call is not its cost.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	require.NoError(b, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
