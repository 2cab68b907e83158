package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRun_WritesTheCommandsCostAndKeepsItsStatus(t *testing.T) {
	tests := []struct {
		name     string
		script   string
		wantCode int
	}{
		{"success", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done", 0},
		{"failure status passed on", "exit 3", 3},
		{"ended by a signal: 128+N", "kill -INT $$", 130},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "r.json")
			code := run([]string{"-o", out, "--", "sh", "-c", tt.script}, io.Discard)
			assert.Equal(t, tt.wantCode, code)
			b, err := os.ReadFile(out)
			require.NoError(t, err)
			var r Result
			require.NoError(t, json.Unmarshal(b, &r))
			assert.Positive(t, r.Wall)
			assert.Positive(t, r.MaxRSS)
		})
	}
}

func TestRun_BadUsage(t *testing.T) {
	assert.Equal(t, 2, run([]string{"sh"}, io.Discard))
}
