package demo

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"time"
)

// blockSize is the length of the shared pseudo-random block every file is
// cut from. It is a power of two so that positions wrap with a mask.
const blockSize = 1 << 20

// prefixLen is the number of leading bytes that are unique to each file.
// They are the SHA-256 of the file's identity, so no two files share content
// even when their block offsets coincide.
const prefixLen = sha256.Size

// newBlock returns blockSize bytes of ChaCha8 output keyed by seed.
// Every file of a server is a window onto this block, which makes content
// generation a memcpy: the server is never the bottleneck of a benchmark.
func newBlock(seed int64) []byte {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], uint64(seed))
	copy(key[8:], "heed demo content block")
	b := make([]byte, blockSize)
	_, _ = rand.NewChaCha8(key).Read(b) // ChaCha8.Read never fails
	return b
}

// fileInfo is everything the server needs to know about one file. It is
// derived from (seed, host name, file index) alone.
type fileInfo struct {
	size    int64
	prefix  [prefixLen]byte
	off     int64 // offset into the block of content position 0
	etag    string
	modTime time.Time
}

// baseModTime is the Last-Modified of file 0; file i is i minutes later.
var baseModTime = time.Date(2025, time.January, 1, 0, 0, 0, 0, time.UTC)

// newFileInfo derives file i of the host called name. Its size is minSize
// when maxSize <= minSize, else a log-uniform draw in [minSize, maxSize], so
// that small files are common and large ones rare, as on a real site.
func newFileInfo(seed int64, name string, i int, minSize, maxSize int64) fileInfo {
	h := sha256.New()
	var buf [16]byte
	binary.LittleEndian.PutUint64(buf[:8], uint64(seed))
	binary.LittleEndian.PutUint64(buf[8:], uint64(i))
	h.Write(buf[:])
	h.Write([]byte(name))
	var f fileInfo
	h.Sum(f.prefix[:0])

	r := rand.New(rand.NewPCG(binary.LittleEndian.Uint64(f.prefix[0:]), binary.LittleEndian.Uint64(f.prefix[8:])))
	f.off = int64(r.Uint64() & (blockSize - 1))
	f.size = minSize
	if maxSize > minSize && minSize > 0 {
		s := float64(minSize) * math.Pow(float64(maxSize)/float64(minSize), r.Float64())
		f.size = min(max(int64(s), minSize), maxSize)
	} else if maxSize > minSize {
		f.size = minSize + r.Int64N(maxSize-minSize+1)
	}
	f.etag = `"` + hex.EncodeToString(f.prefix[16:32]) + `"`
	f.modTime = baseModTime.Add(time.Duration(i) * time.Minute)
	return f
}

// content is an io.ReadSeeker over one file's bytes, generated on the fly
// from the file's prefix and the shared block. It holds no file in memory,
// so a 256 MiB file costs the same few words as a 1 KiB one.
type content struct {
	f     *fileInfo
	block []byte
	pos   int64
}

// Read fills p with the bytes at the current position.
func (c *content) Read(p []byte) (int, error) {
	if c.pos >= c.f.size {
		return 0, io.EOF
	}
	if rem := c.f.size - c.pos; int64(len(p)) > rem {
		p = p[:rem]
	}
	n := 0
	for n < len(p) {
		pos := c.pos + int64(n)
		if pos < prefixLen {
			n += copy(p[n:], c.f.prefix[pos:])
			continue
		}
		at := (c.f.off + pos) & (blockSize - 1)
		n += copy(p[n:], c.block[at:])
	}
	c.pos += int64(n)
	return n, nil
}

// WriteTo writes the rest of the file to w straight from the block, without
// an intermediate buffer. io.Copy uses it, which makes hashing fast.
func (c *content) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for c.pos < c.f.size {
		var chunk []byte
		if c.pos < prefixLen {
			chunk = c.f.prefix[c.pos:]
		} else {
			at := (c.f.off + c.pos) & (blockSize - 1)
			chunk = c.block[at:]
		}
		if rem := c.f.size - c.pos; int64(len(chunk)) > rem {
			chunk = chunk[:rem]
		}
		n, err := w.Write(chunk)
		c.pos += int64(n)
		total += int64(n)
		if err != nil {
			return total, err
		}
		if n < len(chunk) {
			return total, io.ErrShortWrite
		}
	}
	return total, nil
}

var errBadSeek = errors.New("demo: seek to a negative position")

// Seek sets the position for the next Read, as io.Seeker describes.
func (c *content) Seek(offset int64, whence int) (int64, error) {
	var abs int64
	switch whence {
	case io.SeekStart:
		abs = offset
	case io.SeekCurrent:
		abs = c.pos + offset
	case io.SeekEnd:
		abs = c.f.size + offset
	default:
		return 0, errors.New("demo: bad whence")
	}
	if abs < 0 {
		return 0, errBadSeek
	}
	c.pos = abs
	return abs, nil
}

// sum returns the hex SHA-256 of the whole file.
func (f *fileInfo) sum(block []byte) string {
	h := sha256.New()
	_, _ = (&content{f: f, block: block}).WriteTo(h) // hash writes never fail
	return hex.EncodeToString(h.Sum(nil))
}
