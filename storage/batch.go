package storage

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// A batch is many rows written by one statement: the rows go to SQLite as one JSON array bound
// to one parameter, which the statement reads with jsonb_each. Through database/sql each
// statement costs a conversion of every argument, a call into C for each, and the step and reset
// of the statement: queueing a paste of 100,000 URLs one statement a URL took half as long again
// (BenchmarkEnqueue). Finished downloads are not written this way: their attempts, moves and
// unnamed list, batched so, took as long as one row a statement (BenchmarkJobLifecycle), the
// time being SQLite's own, in its B-trees and its log.
//
// A string goes into a batch only if it comes back byte for byte: valid UTF-8 without NUL.
// Anything else — a URL or an error text with a stray byte — is written one row a statement,
// its bytes bound as they are.

// batch builds the JSON array of one batch: one inner array a row.
type batch struct {
	b   []byte
	bad bool // a string that JSON cannot carry exactly: write these rows one by one
}

func (bt *batch) row() {
	if len(bt.b) == 0 {
		bt.b = append(bt.b, '[')
	} else {
		bt.b = append(bt.b, ',')
	}
	bt.b = append(bt.b, '[')
}

func (bt *batch) end() { bt.b = append(bt.b, ']') }

func (bt *batch) sep() {
	if bt.b[len(bt.b)-1] != '[' {
		bt.b = append(bt.b, ',')
	}
}

func (bt *batch) int(v int64) {
	bt.sep()
	bt.b = strconv.AppendInt(bt.b, v, 10)
}

func (bt *batch) str(s string) {
	bt.sep()
	if !exact(s) {
		bt.bad = true
	}
	bt.b = appendJSONString(bt.b, s)
}

// json returns the array, or false if a row must be written on its own (see batch).
func (bt *batch) json() (string, bool) {
	if bt.bad || len(bt.b) == 0 {
		return "", false
	}
	return string(append(bt.b, ']')), true
}

// exact reports whether s survives a trip through a JSON string in SQLite unchanged.
func exact(s string) bool {
	return strings.IndexByte(s, 0) < 0 && utf8.ValidString(s)
}

// appendJSONString appends s as a JSON string: quotes, backslashes and control characters
// escaped, everything else as it is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
