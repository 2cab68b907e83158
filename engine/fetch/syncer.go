package fetch

import (
	"os"
	"sync"
	"time"
)

// syncer makes complete parts durable before they take their final names
// (F4), several at a time.
//
// Whoever asks first leads: it takes every part queued so far and syncs them
// together — on Linux with one syncfs(2) of the download folder's file
// system, where a file system writes a batch of small files far faster than
// one fsync each (one pass over the inode table and the data, instead of two
// waits per file) — then wakes the next one waiting, who leads the following
// batch. A lone part is fsynced by itself, and when the batch sync fails each
// part is fsynced alone so the error lands on the part it belongs to.
//
// syncfs also writes out whatever else on that file system is waiting to be
// written, so a batch can take longer while another program writes a lot;
// the callers are downloads whose bytes have all arrived, and the engine
// bounds how many of them may wait (see engine.Options.Workers).
type syncer struct {
	dir   *os.File // the download folder
	mu    sync.Mutex
	queue []*syncReq
	busy  bool      // a leader is syncing
	last  time.Time // when the last batch was done
}

// A leader lingers syncLinger for company when the last batch ended less
// than syncBusy ago and fewer than syncGather parts are waiting: a stream
// of small files then costs one sync per few milliseconds, while a lone
// download is synced at once.
const (
	syncLinger = time.Millisecond
	syncBusy   = 20 * time.Millisecond
	syncGather = 16
)

type syncReq struct {
	file *os.File
	err  error
	done bool          // set before wake is closed: err is final
	wake chan struct{} // closed when done, or when this request must lead
}

// sync returns once file's data and metadata are on stable storage.
func (s *syncer) sync(file *os.File) error {
	r := &syncReq{file: file, wake: make(chan struct{})}
	s.mu.Lock()
	s.queue = append(s.queue, r)
	lead := !s.busy
	s.busy = true
	s.mu.Unlock()
	if !lead {
		<-r.wake
		if r.done {
			return r.err
		}
	}
	// r leads: it is at the head of the queue. While parts keep finishing
	// (the last batch was moments ago), let a few more join first.
	s.mu.Lock()
	if len(s.queue) < syncGather && time.Since(s.last) < syncBusy {
		s.mu.Unlock()
		time.Sleep(syncLinger)
		s.mu.Lock()
	}
	batch := s.queue
	s.queue = nil
	s.mu.Unlock()
	s.flush(batch)
	s.mu.Lock()
	s.last = time.Now()
	if len(s.queue) > 0 {
		close(s.queue[0].wake) // not done: it leads the next batch
	} else {
		s.busy = false
	}
	s.mu.Unlock()
	for _, b := range batch {
		if b != r {
			close(b.wake)
		}
	}
	return r.err
}

// flush makes every file of batch durable and records each one's error.
func (s *syncer) flush(batch []*syncReq) {
	if len(batch) > 1 && s.dir != nil && syncFS(s.dir) == nil {
		for _, b := range batch {
			b.done = true
		}
		return
	}
	for _, b := range batch {
		b.err, b.done = b.file.Sync(), true
	}
}
