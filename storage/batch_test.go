package storage

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A string goes into a batch only if JSON gives it back exactly.
func TestBatch_ExactStringsOnly(t *testing.T) {
	for s, want := range map[string]bool{"": true, "plain": true, "é ✓ \t\n\"\\": true,
		"nul\x00": false, "bad\xff": false, "cut\xc3": false} {
		assert.Equal(t, want, exact(s), "%q", s)
	}
	var bt batch
	bt.row()
	bt.str("a\"b\\c\x01d")
	bt.int(-7)
	bt.end()
	got, ok := bt.json()
	require.True(t, ok)
	assert.Equal(t, `[["a\"b\\c\u0001d",-7]]`, got)
}
