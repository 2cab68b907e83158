package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
)

// defaultsKey is the setting that holds the saved default tunables.
const defaultsKey = "defaults"

// loadDefaults returns the default tunables saved with SetDefaults, or
// DefaultTunables when none were.
func loadDefaults(ctx context.Context, store Store) (Tunables, error) {
	t := DefaultTunables()
	err := loadSetting(ctx, store, defaultsKey, "saved default tunables", &t, func() error { return t.Normalize().Validate() })
	if err != nil {
		return DefaultTunables(), err
	}
	return t.Normalize(), nil
}

// loadSetting decodes the JSON saved under key into v, which stays as it is
// when nothing was saved, and checks it with validate. Errors name the
// setting as what.
func loadSetting(ctx context.Context, store Store, key, what string, v any, validate func() error) error {
	s, err := store.Setting(ctx, key)
	if err != nil || s == "" {
		return err
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if err := validate(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// Limits are L2's global caps across all hosts: requests per second and
// bytes per second, 0 for no cap.
type Limits struct {
	RatePerSec  float64 `json:"rate_per_sec"`
	BytesPerSec int64   `json:"bytes_per_sec"`
}

// MaxGlobalRate is the largest global request rate (L2) Limits take.
const MaxGlobalRate = 1e6

// Validate names the limit that is out of bounds.
func (l Limits) Validate() error {
	if !(l.RatePerSec >= 0 && l.RatePerSec <= MaxGlobalRate) {
		return fmt.Errorf("global request rate: %s is not between 0 (no cap) and %s per second",
			strconv.FormatFloat(l.RatePerSec, 'f', -1, 64), strconv.FormatFloat(MaxGlobalRate, 'f', -1, 64))
	}
	if l.BytesPerSec < 0 {
		return fmt.Errorf("global bandwidth: %d bytes per second is below 0 (0 is no cap)", l.BytesPerSec)
	}
	return nil
}

// limitsKey is the setting that holds the limits saved with SetLimits.
const limitsKey = "global_limits"

func loadLimits(ctx context.Context, store Store) (Limits, error) {
	var l Limits
	if err := loadSetting(ctx, store, limitsKey, "saved global limits", &l, func() error { return l.Validate() }); err != nil {
		return Limits{}, err
	}
	return l, nil
}

// Limits returns the global caps in force (L2).
func (e *Engine) Limits() Limits {
	return Limits{RatePerSec: e.core.Stats().GlobalRatePerSec, BytesPerSec: e.Bandwidth()}
}

// SetLimits changes the global caps live (L2) and saves them for the next
// start with Options.SavedLimits. A limit out of bounds changes nothing.
func (e *Engine) SetLimits(ctx context.Context, l Limits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	e.core.SetGlobalRate(l.RatePerSec)
	e.SetBandwidth(l.BytesPerSec)
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	return e.store.SetSetting(ctx, limitsKey, string(b))
}

// pausedAllKey is the setting that says everything was paused (U7).
const pausedAllKey = "paused_all"

// SetPausedAll pauses or resumes everything at once (U7), and saves it for
// the next start with Options.SavedLimits: a window closed while everything
// was paused opens with everything paused, as it was left.
func (e *Engine) SetPausedAll(ctx context.Context, paused bool) error {
	v := ""
	if paused {
		e.core.PauseAll()
		v = "true"
	} else {
		e.core.ResumeAll()
	}
	return e.store.SetSetting(ctx, pausedAllKey, v)
}

// SetDefaults changes the tunables of every host that has none of its own,
// live (G2), and saves them for the next start. The error names the field
// that is out of bounds; nothing changes then.
func (e *Engine) SetDefaults(ctx context.Context, t Tunables) error {
	if err := e.core.SetDefaults(t); err != nil {
		return err
	}
	b, err := json.Marshal(e.core.Defaults())
	if err != nil {
		return err
	}
	return e.store.SetSetting(ctx, defaultsKey, string(b))
}
