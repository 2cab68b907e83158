package robots

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refMatch is the obvious O(len(path)·len(pattern)) dynamic programme over
// the compiled pieces, octet by octet, kept independent of match's greedy
// scan so the two can be checked against each other.
func refMatch(p pattern, path string) bool {
	// tokens: -1 is a star, anything else an octet.
	var tok []int
	for i, part := range p.parts {
		if i > 0 {
			tok = append(tok, -1)
		}
		for j := 0; j < len(part); j++ {
			tok = append(tok, int(part[j]))
		}
	}
	// reach[j]: the tokens so far can match path[:j].
	reach := make([]bool, len(path)+1)
	reach[0] = true
	for _, t := range tok {
		next := make([]bool, len(path)+1)
		for j := range reach {
			switch {
			case t == -1:
				next[j] = reach[j] || j > 0 && next[j-1]
			case j > 0:
				next[j] = reach[j-1] && int(path[j-1]) == t
			}
		}
		reach = next
	}
	if p.anchored {
		return reach[len(path)]
	}
	for _, ok := range reach {
		if ok {
			return true
		}
	}
	return false
}

func TestCanonical_W4_PercentEncodingNormalised(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"plain path untouched", "/a/b-c_d.e~f?g=h&i", "/a/b-c_d.e~f?g=h&i"},
		{"unreserved escapes decoded", "/%62%61%7A", "/baz"},
		{"unreserved decoded in any case", "/%7e%2D%2e%5F", "/~-._"},
		{"reserved escape stays", "/a%2Fb", "/a%2Fb"},
		{"hex upper-cased", "/a%2fb%3a", "/a%2Fb%3A"},
		{"non-ASCII escape stays, upper-cased", "/%e3%83%84", "/%E3%83%84"},
		{"UTF-8 encoded", "/ツ", "/%E3%83%84"},
		{"invalid UTF-8 encoded octet by octet", "/\xff\xfe", "/%FF%FE"},
		{"space encoded", "/a b", "/a%20b"},
		{"controls encoded", "/\x00\x7f", "/%00%7F"},
		{"chars never bare in a URI encoded", "/\"<>\\^`{|}", "/%22%3C%3E%5C%5E%60%7B%7C%7D"},
		{"literal star encoded", "/a*b", "/a%2Ab"},
		{"literal dollar encoded", "/a$", "/a%24"},
		{"stray percent", "/100%", "/100%25"},
		{"percent with one hex digit", "/%4", "/%254"},
		{"percent with non-hex", "/%zz", "/%25zz"},
		{"percent-encoded percent stays", "/%25", "/%25"},
		{"escape at the very end", "/a%41", "/aA"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := canonical(tc.in)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, got, canonical(got), "canonical form is a fixed point")
		})
	}
}

func TestCanonical_CanonicalPathsDoNotAllocate(t *testing.T) {
	path := "/a/b/c%2F%E3%83%84?x=1&y=%3A"
	require.Equal(t, path, canonical(path))
	assert.Zero(t, testing.AllocsPerRun(100, func() { _ = canonicalPath(path) }))
}

func TestCanonicalPath_W4_FragmentDroppedAndSlashAdded(t *testing.T) {
	assert.Equal(t, "/a?b", canonicalPath("/a?b#frag"))
	assert.Equal(t, "/", canonicalPath(""))
	assert.Equal(t, "/?q", canonicalPath("?q"))
}

func TestPattern_W4_StarAndDollar(t *testing.T) {
	cases := []struct {
		pattern string
		yes, no []string
	}{
		{"/fish", []string{"/fish", "/fish.html", "/fish/salmon", "/fishheads", "/fish?id=1"}, []string{"/Fish", "/catfish", "/?id=fish", "/fis"}},
		{"/fish*", []string{"/fish", "/fish.html", "/fishheads/yummy.html"}, []string{"/Fish.asp", "/catfish"}},
		{"/fish/", []string{"/fish/", "/fish/salmon", "/fish/?id=1"}, []string{"/fish", "/fish.html", "/Fish/"}},
		{"/*.php", []string{"/a.php", "/f/a.php?x", "//f/any.php.file.html", "/index?f=a.php/"}, []string{"/php/", "/index?php", "/a.PHP"}},
		{"/*.php$", []string{"/a.php", "/f/a.php"}, []string{"/a.php?x", "/a.php/", "/a.php5", "/a?php", "/a.PHP"}},
		{"/fish*.php", []string{"/fish.php", "/fishheads/cat.php?p"}, []string{"/Fish.PHP"}},
		{"/$", []string{"/"}, []string{"/a", "/?"}},
		{"/a$b", []string{"/a$b", "/a%24b", "/a$bc"}, []string{"/ab", "/a"}},
		{"/a$$", []string{"/a$", "/a%24"}, []string{"/a", "/a$x"}},
		{"*", []string{"/", "/anything"}, nil},
		{"*$", []string{"/", "/anything"}, nil},
		{"*.gif$", []string{"/a.gif", "/x/y.gif"}, []string{"/a.gif?x", "/a.gifs"}},
		{"/a**b", []string{"/ab", "/axxb", "/a/b/c"}, []string{"/a", "/ba"}},
		{"/a*b*c$", []string{"/abc", "/aXbYc", "/abcbc", "/abbc"}, []string{"/abcx", "/acb"}},
		{"/*/private/", []string{"/a/private/x", "/a/b/private/"}, []string{"/private/x"}},
		{"/a*ab$", []string{"/aab", "/aaab", "/abab"}, []string{"/ab", "/aaba"}},
		{"/%2A", []string{"/*", "/%2A", "/%2a"}, []string{"/x"}},
		{"/%7Ea", []string{"/~a", "/%7ea"}, []string{"/%7Fa"}},
	}
	for _, tc := range cases {
		t.Run(tc.pattern, func(t *testing.T) {
			p := compile(tc.pattern)
			for _, s := range tc.yes {
				assert.True(t, p.match(canonicalPath(s)), "%q should match %q", tc.pattern, s)
			}
			for _, s := range tc.no {
				assert.False(t, p.match(canonicalPath(s)), "%q should not match %q", tc.pattern, s)
			}
		})
	}
}

func TestPattern_W4_LengthCountsCanonicalOctets(t *testing.T) {
	cases := []struct {
		pattern string
		want    int
	}{
		{"/", 1},
		{"/a*b$", 5},
		{"/a**b", 5},
		{"/%62", 2},           // "/b"
		{"/%2f", 4},           // "/%2F"
		{"/ツ", 10},            // "/%E3%83%84"
		{"/a$b", 6},           // "/a%24b": a $ that is not last is a character
		{"/path/foo-%24", 13}, // stays encoded
		{"*.gif$", 6},         // star and anchor count
		{"/a b", 6},           // "/a%20b"
		{"/fish*", len("/fish") + 1},
	}
	for _, tc := range cases {
		t.Run(tc.pattern, func(t *testing.T) {
			assert.Equal(t, tc.want, compile(tc.pattern).length)
		})
	}
}

// TestPattern_W4_MatchAgreesWithReference checks the greedy scan against the
// dynamic programme on many small random patterns and paths over a tiny
// alphabet, where near-misses and overlaps are common.
func TestPattern_W4_MatchAgreesWithReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(9309, 1))
	const alphabet = "ab*/"
	word := func(n int, chars string) string {
		var b strings.Builder
		for range n {
			b.WriteByte(chars[rng.IntN(len(chars))])
		}
		return b.String()
	}
	for range 20000 {
		raw := "/" + word(rng.IntN(7), alphabet)
		if rng.IntN(3) == 0 {
			raw += "$"
		}
		p := compile(raw)
		path := canonicalPath("/" + word(rng.IntN(9), "ab/"))
		require.Equal(t, refMatch(p, path), p.match(path), "pattern %q path %q", raw, path)
	}
}

// TestPattern_W4_MatchIsLinear feeds patterns that make a backtracking
// matcher explode a 100 KB path; the scan must not care.
func TestPattern_W4_MatchIsLinear(t *testing.T) {
	path := "/" + strings.Repeat("a", 100<<10)
	cases := []struct {
		name    string
		pattern string
		want    bool
	}{
		{"stars and a missing b", "/*a*a*a*a*a*a*b", false},
		{"a thousand stars", "/" + strings.Repeat("*a", 1000) + "*b", false},
		{"a thousand stars anchored", "/" + strings.Repeat("*a", 1000) + "*b$", false},
		{"a thousand stars matching", "/" + strings.Repeat("*a", 1000) + "$", true},
		{"long pieces almost matching", "/*" + strings.Repeat("a", 5000) + "b*", false},
		{"runs of stars", "/" + strings.Repeat("*", 10000) + "b", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := compile(tc.pattern)
			start := time.Now()
			got := p.match(path)
			elapsed := time.Since(start)
			assert.Equal(t, tc.want, got)
			assert.Less(t, elapsed, 100*time.Millisecond, "match must be linear")
		})
	}
}

// BenchmarkAllowed checks a path against a file of 1,000 rules, most of
// which start like the path does, none of which match it.
func BenchmarkAllowed(b *testing.B) {
	var body strings.Builder
	body.WriteString("User-agent: *\n")
	for i := range 1000 {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&body, "Disallow: /shop/item%d/\n", i)
		case 1:
			fmt.Fprintf(&body, "Allow: /shop/*/page%d.html$\n", i)
		case 2:
			fmt.Fprintf(&body, "Disallow: /*?session=%d\n", i)
		default:
			fmt.Fprintf(&body, "Disallow: /shop/*/*.pdf%d\n", i)
		}
	}
	r := Parse([]byte(body.String()), "heed")
	require.Len(b, r.rules, 1000)
	const path = "/shop/item77x/list/page7.html?sort=price"
	ok, rule := r.Allowed(path)
	require.True(b, ok)
	require.Empty(b, rule)
	b.ReportAllocs()
	for b.Loop() {
		r.Allowed(path)
	}
}
