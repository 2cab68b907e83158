package demo

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readAll reads f's content from the start with Read only (no WriteTo).
func readAll(t *testing.T, f *fileInfo, block []byte) []byte {
	t.Helper()
	c := &content{f: f, block: block}
	out := make([]byte, 0, f.size)
	buf := make([]byte, 777) // odd size: reads straddle the prefix and block wrap
	for {
		n, err := c.Read(buf)
		out = append(out, buf[:n]...)
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	return out
}

func TestContent_SeekReadMatchesWhole(t *testing.T) {
	block := newBlock(7)
	cases := []struct {
		name string
		size int64
		off  int64
	}{
		{"empty", 0, 0},
		{"shorter than prefix", 10, 5},
		{"prefix exactly", prefixLen, 0},
		{"wraps the block", 3 * blockSize / 2, blockSize - 100},
		{"small at end of block", 4096, blockSize - 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFileInfo(7, "h", 0, tc.size, tc.size)
			f.off = tc.off
			whole := readAll(t, &f, block)
			require.Len(t, whole, int(tc.size))

			// WriteTo gives the same bytes as Read.
			var viaWriteTo bytes.Buffer
			n, err := (&content{f: &f, block: block}).WriteTo(&viaWriteTo)
			require.NoError(t, err)
			assert.Equal(t, tc.size, n)
			assert.True(t, bytes.Equal(whole, viaWriteTo.Bytes()), "WriteTo differs from Read")

			// The hash is the hash of those bytes.
			want := sha256.Sum256(whole)
			assert.Equal(t, hex.EncodeToString(want[:]), f.sum(block))

			// Seeking anywhere then reading gives the matching tail.
			for _, at := range []int64{0, 1, prefixLen - 1, prefixLen, tc.size / 2, tc.size - 1, tc.size} {
				if at < 0 || at > tc.size {
					continue
				}
				c := &content{f: &f, block: block}
				pos, err := c.Seek(at, io.SeekStart)
				require.NoError(t, err)
				require.Equal(t, at, pos)
				tail, err := io.ReadAll(c)
				require.NoError(t, err)
				assert.True(t, bytes.Equal(whole[at:], tail), "tail from %d differs", at)
			}

			c := &content{f: &f, block: block}
			end, err := c.Seek(0, io.SeekEnd)
			require.NoError(t, err)
			assert.Equal(t, tc.size, end)
			_, err = c.Seek(-1, io.SeekStart)
			assert.Error(t, err)
		})
	}
}

func TestContent_DeterministicPerSeedHostAndIndex(t *testing.T) {
	base := newFileInfo(1, "alpha", 3, 1000, 1000)
	block1 := newBlock(1)
	same := newFileInfo(1, "alpha", 3, 1000, 1000)
	assert.Equal(t, base.sum(block1), same.sum(newBlock(1)), "same seed, host and index must give the same bytes")
	assert.Equal(t, base.etag, same.etag)

	others := []struct {
		name  string
		f     fileInfo
		block []byte
	}{
		{"other seed", newFileInfo(2, "alpha", 3, 1000, 1000), newBlock(2)},
		{"other host", newFileInfo(1, "beta", 3, 1000, 1000), block1},
		{"other index", newFileInfo(1, "alpha", 4, 1000, 1000), block1},
	}
	for _, tc := range others {
		t.Run(tc.name, func(t *testing.T) {
			assert.NotEqual(t, base.sum(block1), tc.f.sum(tc.block))
			assert.NotEqual(t, base.etag, tc.f.etag)
		})
	}
}

func TestContent_SizesWithinBounds(t *testing.T) {
	cases := []struct {
		name     string
		min, max int64
	}{
		{"fixed", 1024, 1024},
		{"fixed when max below min", 1024, 10},
		{"log-uniform", 4 << 10, 384 << 10},
		{"from zero", 0, 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			distinct := map[int64]bool{}
			for i := range 200 {
				f := newFileInfo(1, "h", i, tc.min, tc.max)
				hi := max(tc.min, tc.max)
				require.GreaterOrEqual(t, f.size, tc.min)
				require.LessOrEqual(t, f.size, hi)
				distinct[f.size] = true
			}
			if tc.max > tc.min {
				assert.Greater(t, len(distinct), 50, "sizes should vary")
			} else {
				assert.Len(t, distinct, 1)
			}
		})
	}
}
