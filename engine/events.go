package engine

import (
	"fmt"
	"time"
)

// EventKind says what an Event records.
type EventKind uint8

const (
	EventThrottle        EventKind = iota + 1 // a throttle response (G5, G6)
	EventDecay                                // a backoff level decayed (G7)
	EventBreakerOpen                          // breaker opened (B1, B3)
	EventBreakerHalfOpen                      // breaker became half-open (B2)
	EventBreakerClosed                        // breaker closed after a good probe (B3)
	EventPause                                // host paused, by the user or by Retry-After (G9)
	EventResume                               // host resumed (G9)
	EventProbeNow                             // user: probe now, open → half-open (B5)
	EventReset                                // user: reset the breaker to closed (B5)
	EventTrip                                 // user: trip the breaker open (B5)
	EventRetune                               // tunables changed (G2)
	EventRetryAfter                           // Retry-After on a response that is not a throttle (G7)
	EventQuota                                // the server's quota started or stopped shaping the host (G12)
)

var eventNames = [...]string{"", "throttle", "decay", "breaker-open", "breaker-half-open", "breaker-closed",
	"pause", "resume", "probe-now", "reset", "trip", "retune", "retry-after", "quota"}

// String returns a short name such as "throttle" or "breaker-open".
func (k EventKind) String() string {
	if int(k) < len(eventNames) && k != 0 {
		return eventNames[k]
	}
	return fmt.Sprintf("event(%d)", int(k))
}

// ParseEventKind returns the EventKind whose String is s.
func ParseEventKind(s string) (EventKind, error) {
	for i, n := range eventNames {
		if n == s && i != 0 {
			return EventKind(i), nil
		}
	}
	return 0, fmt.Errorf("unknown event kind %q", s)
}

// Event is one entry of a host's timeline (S4).
type Event struct {
	Host   string
	At     time.Time
	Kind   EventKind
	Detail string
}
