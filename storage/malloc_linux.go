//go:build linux && cgo

package storage

/*
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

// heed_keep_freed_memory stops glibc from handing freed memory at the top of a heap back to the
// system (madvise) as soon as 128 KiB of it is free.
static void heed_keep_freed_memory(void) {
#if defined(__GLIBC__) && defined(M_TRIM_THRESHOLD)
	mallopt(M_TRIM_THRESHOLD, 8 << 20);
#endif
}
*/
import "C"

// SQLite's page cache and statements live in C memory. Every cgo call may run on another thread
// and so in another glibc arena, and glibc gives an arena's free top back to the system once
// 128 KiB of it is free, to fault it in again moments later: at 20,000 small downloads that was
// 18,000 madvise calls and their page faults, about 10 % of Heed's CPU time. Keeping up to 8 MiB
// free per heap brings that to about 300 calls, as 64 MiB did; 64 MiB also kept the peak RSS of a
// million queued jobs about 8 MiB higher (medians of 12 and 9 runs), once at 290 MiB.
func init() { C.heed_keep_freed_memory() }
