package crawl

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCrawl_W6_Trap(t *testing.T) {
	long := "http://h/" + strings.Repeat("x", MaxURLBytes-len("http://h/"))
	require.Len(t, long, 2048)
	cases := []struct {
		name    string
		url     string
		trapped bool
		why     string
	}{
		{"plain page", "http://h/a/b/c.html", false, ""},
		{"root", "http://h/", false, ""},
		{"calendar date", "http://h/cal/2026/01/15", false, ""},
		{"calendar with three repeats", "http://h/cal/2026/01/01/01", false, ""},
		{"calendar repeating day", "http://h/cal/2026/01/01/01/01", true, `path segment "01" repeated 4 times`},
		{"calendar nesting deeper and deeper", "http://h/cal/" + strings.Repeat("2026/", 10), true, `path segment "2026" repeated 10 times`},
		{"same segment four times", "http://h/a/a/a/a/", true, `path segment "a" repeated 4 times`},
		{"repeats need not be together", "http://h/a/b/a/b/a/b/a/b", true, `path segment "a" repeated 4 times`},
		{"empty segments count", "http://h/x////y", false, ""},
		{"empty segments four times", "http://h/x/////y", true, `path segment "" repeated 4 times`},
		{"dot segments resolved first", "http://h/a/./a/./a/../b", false, ""},
		{"escaped segments compared in key form", "http://h/%61/a/%41/a/a", true, `path segment "a" repeated 4 times`},
		{"case-sensitive", "http://h/a/A/a/A/a/A", false, ""},
		{"20 segments", "http://h" + segs(20), false, ""},
		{"21 segments", "http://h" + segs(21), true, "more than 20 path segments"},
		{"trailing slash adds no segment", "http://h" + segs(20) + "/", false, ""},
		{"2,048 bytes", long, false, ""},
		{"2,049 bytes", long + "y", true, "URL over 2,048 bytes"},
		{"fragment not counted", long + "#frag", false, ""},
		{"query counted", long[:2040] + "?q=123456", true, "URL over 2,048 bytes"},
		{"session id in query is not a trap (depth bounds it)", "http://h/page?sid=8f14e45fceea167a5a36dedd4bea2543", false, ""},
		{"calendar in query is not a trap (depth bounds it)", "http://h/cal?month=2026-02&month=2026-03", false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			why, trapped := Trap(mustParse(t, tc.url))
			assert.Equal(t, tc.trapped, trapped)
			assert.Equal(t, tc.why, why)
		})
	}
	why, trapped := Trap(nil)
	assert.False(t, trapped)
	assert.Empty(t, why)
}

// segs is a path of n distinct segments.
func segs(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("/s")
		b.WriteByte(byte('a' + i%26))
		b.WriteByte(byte('a' + i/26))
	}
	return b.String()
}
