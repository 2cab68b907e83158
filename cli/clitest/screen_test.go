package clitest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// What progress bars send, drawn as xterm draws it.
func TestScreen(t *testing.T) {
	s := NewScreen(10, 4)
	s.Write([]byte("0123456789\r\n")) // a full line and a line break: no empty line
	assert.Zero(t, s.Wraps)
	s.Write([]byte("bar 1\r\nbar 2\r\n"))
	s.Write([]byte("\x1b[2A\x1b[Jdone\r\nbar 2!\r\n")) // up two, erase below, redraw
	assert.Equal(t, []string{"0123456789", "done", "bar 2!"}, s.Lines())
	s.Write([]byte("\x1b[1A\x1b[Kx")) // up, erase the line
	assert.Equal(t, []string{"0123456789", "done", "x"}, s.Lines())
	s.Write([]byte("\r\n0123456789A\r\n")) // one too many: wraps
	assert.Equal(t, 1, s.Wraps)
	assert.Equal(t, []string{"0123456789"}, s.Wrapped)
	s.Write([]byte("\x1b[9A")) // never above the visible screen
	s.Write([]byte("top"))
	assert.Equal(t, "top", s.Visible()[0][:3])
	s.Write([]byte("\x1b[?25l\xe2\x96")) // unknown, then half a rune
	s.Write([]byte("\x88"))
	assert.Equal(t, []string{`"\x1b[?25l"`}, s.Unknown)
	assert.True(t, strings.Contains(s.String(), "top█"), s.String())
	s.Resize(4, 4)
	assert.LessOrEqual(t, s.Widest(), 4)
}
