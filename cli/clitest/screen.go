// Package clitest holds what tests of Heed's command line share: a small
// terminal emulator that replays what heed wrote to a terminal, so that a
// test can look at the screen a person would have seen.
package clitest

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Screen is a terminal of a fixed width that keeps every line ever written
// (the visible rows and the scrollback above them), as xterm draws them:
// a line reaching the last column wraps only when the next character comes
// (a line break right after it does not leave an empty line), a resize
// cuts lines (no reflow), and it understands what progress bars send —
// carriage return, line feed, backspace, cursor up/down/to column (CSI A,
// B, F, G), erase in line (CSI K) and erase in display from the cursor
// (CSI J). Other escape sequences are counted in Unknown, not drawn.
type Screen struct {
	Width, Height int
	// Wraps counts the characters that did not fit on their line and
	// went on to the next; Wrapped holds each line that overflowed so, as
	// it was when it did.
	Wraps   int
	Wrapped []string
	// Unknown counts the escape sequences Screen does not understand.
	Unknown []string

	lines    [][]rune
	row, col int // col == Width: at the last column, wrap pending
	pending  []byte
}

// NewScreen is an empty width × height terminal.
func NewScreen(width, height int) *Screen {
	return &Screen{Width: width, Height: height, lines: [][]rune{nil}}
}

// Resize changes the size as a terminal without reflow does: lines wider
// than width are cut.
func (s *Screen) Resize(width, height int) {
	s.Width, s.Height = width, height
	for i, l := range s.lines {
		if len(l) > width {
			s.lines[i] = l[:width]
		}
	}
	s.col = min(s.col, width)
}

// Write replays p; a sequence cut between two writes is completed by the
// next one.
func (s *Screen) Write(p []byte) (int, error) {
	b := append(s.pending, p...)
	s.pending = nil
	for len(b) > 0 {
		switch c := b[0]; {
		case c == 0x1b:
			n, ok := s.escape(b)
			if !ok {
				s.pending = append([]byte(nil), b...)
				return len(p), nil
			}
			b = b[n:]
		case c == '\r':
			s.col = 0
			b = b[1:]
		case c == '\n':
			s.down(1)
			s.col = min(s.col, s.Width-1)
			b = b[1:]
		case c == '\b':
			s.col = max(min(s.col, s.Width-1)-1, 0)
			b = b[1:]
		case c < 0x20 || c == 0x7f: // other controls (bell, tab) draw nothing here
			b = b[1:]
		default:
			if !utf8.FullRune(b) {
				s.pending = append([]byte(nil), b...)
				return len(p), nil
			}
			r, n := utf8.DecodeRune(b)
			s.put(r)
			b = b[n:]
		}
	}
	return len(p), nil
}

// top is the first visible line.
func (s *Screen) top() int { return max(len(s.lines)-s.Height, 0) }

func (s *Screen) down(n int) {
	for range n {
		s.row++
		if s.row == len(s.lines) {
			s.lines = append(s.lines, nil)
		}
	}
}

func (s *Screen) put(r rune) {
	if s.col >= s.Width { // the pending wrap
		s.Wraps++
		s.Wrapped = append(s.Wrapped, string(s.lines[s.row]))
		s.down(1)
		s.col = 0
	}
	l := s.lines[s.row]
	for len(l) <= s.col {
		l = append(l, ' ')
	}
	l[s.col] = r
	s.lines[s.row] = l
	s.col++
}

// escape handles the sequence at the start of b and says how long it was;
// ok is false when b ends before it does.
func (s *Screen) escape(b []byte) (n int, ok bool) {
	if len(b) < 2 {
		return 0, false
	}
	if b[1] != '[' {
		s.Unknown = append(s.Unknown, fmt.Sprintf("%q", b[:2]))
		return 2, true
	}
	i := 2
	for i < len(b) && (b[i] < 0x40 || b[i] > 0x7e) {
		i++
	}
	if i == len(b) {
		return 0, false
	}
	params, final := string(b[2:i]), b[i]
	num := func(def int) int {
		if v, err := strconv.Atoi(params); err == nil && v > 0 {
			return v
		}
		return def
	}
	switch final {
	case 'A': // cursor up, never above the visible screen
		s.row = max(s.row-num(1), s.top())
		s.col = min(s.col, s.Width-1)
	case 'B':
		s.down(num(1))
		s.col = min(s.col, s.Width-1)
	case 'F': // up, to the first column
		s.row = max(s.row-num(1), s.top())
		s.col = 0
	case 'G':
		s.col = min(num(1)-1, s.Width-1)
	case 'K':
		l := s.lines[s.row]
		switch params {
		case "", "0":
			if s.col < len(l) {
				s.lines[s.row] = l[:s.col]
			}
		case "2":
			s.lines[s.row] = nil
		default:
			s.Unknown = append(s.Unknown, fmt.Sprintf("%q", b[:i+1]))
		}
	case 'J':
		if params != "" && params != "0" {
			s.Unknown = append(s.Unknown, fmt.Sprintf("%q", b[:i+1]))
			break
		}
		if l := s.lines[s.row]; s.col < len(l) {
			s.lines[s.row] = l[:s.col]
		}
		s.lines = s.lines[:s.row+1]
	default:
		s.Unknown = append(s.Unknown, fmt.Sprintf("%q", b[:i+1]))
	}
	return i + 1, true
}

// Lines is every line, the scrollback and the visible screen, without
// trailing blanks and without the empty line the cursor may sit on last.
func (s *Screen) Lines() []string {
	out := make([]string, len(s.lines))
	for i, l := range s.lines {
		out[i] = strings.TrimRight(string(l), " ")
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// Visible is the lines on the screen now, without trailing blank ones.
func (s *Screen) Visible() []string {
	l := s.Lines()
	return l[min(s.top(), len(l)):]
}

// Widest is the width of the widest line ever drawn, in runes.
func (s *Screen) Widest() int {
	w := 0
	for _, l := range s.Lines() {
		w = max(w, utf8.RuneCountInString(l))
	}
	return w
}

// String is the screen's lines, one a line, for a failing test's message.
func (s *Screen) String() string { return strings.Join(s.Lines(), "\n") }
