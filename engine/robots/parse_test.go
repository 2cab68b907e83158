package robots

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRobots_W4_UserAgentProductToken(t *testing.T) {
	cases := []struct {
		name, line, agent string
		applies           bool
	}{
		{"exact", "heed", "heed", true},
		{"case-insensitive", "HeEd", "heed", true},
		{"agent given in caps", "heed", "HEED", true},
		{"version after the token", "heed/1.0", "heed", true},
		{"agent given with version", "heed", "heed/2.3 (+https://x)", true},
		{"words after the token", "heed crawler", "heed", true},
		{"longer token is not a prefix match", "heedbot", "heed", false},
		{"shorter token does not match", "hee", "heed", false},
		{"token with - and _", "Heed_Bot-X", "heed_bot-x", true},
		{"empty value names nobody", "", "heed", false},
		{"empty agent matches nothing", "heed", "", false},
		{"leading junk makes an empty token", "/heed", "heed", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body := "User-agent: *\nAllow: /\n\nUser-agent: " + tc.line + "\nDisallow: /\n"
			ok, _ := Parse([]byte(body), tc.agent).Allowed("/page")
			assert.Equal(t, tc.applies, !ok)
		})
	}
	t.Run("star with words after it is *", func(t *testing.T) {
		checkAll(t, "User-agent: * everyone\nDisallow: /\n", "heed", want{"/", false})
	})
	t.Run("star glued to a word is not *", func(t *testing.T) {
		checkAll(t, "User-agent: *bot\nDisallow: /\n", "heed", want{"/", true})
	})
}

func TestRobots_W4_GroupsAndFallback(t *testing.T) {
	cases := []struct {
		name, body string
		wants      []want
	}{
		{"consecutive user-agents share a group",
			"User-agent: other\nUser-agent: heed\nDisallow: /a\n", []want{{"/a", false}, {"/b", true}}},
		{"blank lines inside the user-agent run",
			"User-agent: other\n\nUser-agent: heed\n\nDisallow: /a\n", []want{{"/a", false}}},
		{"a rule ends the run",
			"User-agent: heed\nDisallow: /a\nUser-agent: other\nDisallow: /b\n", []want{{"/a", false}, {"/b", true}}},
		{"groups for heed merge",
			"User-agent: heed\nDisallow: /a\n\nUser-agent: other\nDisallow: /b\n\nUser-agent: HEED\nDisallow: /c\n",
			[]want{{"/a", false}, {"/b", true}, {"/c", false}}},
		{"* ignored when heed has a group",
			"User-agent: *\nDisallow: /a\n\nUser-agent: heed\nDisallow: /b\n", []want{{"/a", true}, {"/b", false}}},
		{"* groups merge when heed has none",
			"User-agent: *\nDisallow: /a\n\nUser-agent: other\nDisallow: /b\n\nUser-agent: *\nDisallow: /c\n",
			[]want{{"/a", false}, {"/b", true}, {"/c", false}}},
		{"a group naming * and heed applies",
			"User-agent: *\nUser-agent: heed\nDisallow: /a\n", []want{{"/a", false}}},
		{"no heed and no * allows all",
			"User-agent: other\nDisallow: /\n", []want{{"/", true}, {"/x", true}}},
		{"empty file allows all", "", []want{{"/", true}}},
		{"rules before any user-agent are ignored",
			"Disallow: /\nAllow: /x\n\nUser-agent: *\nDisallow: /a\n", []want{{"/", true}, {"/a", false}}},
		{"file of only rules allows all", "Disallow: /\n", []want{{"/", true}}},
		{"unknown lines do not end the run",
			"User-agent: heed\nNoindex: /x\nUser-agent: other\nDisallow: /a\n", []want{{"/a", false}}},
		{"sitemap does not end the run",
			"User-agent: heed\nSitemap: https://x/s.xml\nUser-agent: *\nDisallow: /\n", []want{{"/", false}}},
		{"crawl-delay ends the run",
			"User-agent: heed\nCrawl-delay: 3\nUser-agent: *\nDisallow: /\n", []want{{"/", true}}},
		{"garbage lines are skipped",
			"User-agent: heed\n\x00\xff garbage here ::\n:no key\nDisallow: /a\n", []want{{"/a", false}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkAll(t, tc.body, "heed", tc.wants...) })
	}
}

func TestRobots_W4_LineSyntax(t *testing.T) {
	cases := []struct{ name, body string }{
		{"LF", "User-agent: heed\nDisallow: /a\n"},
		{"CRLF", "User-agent: heed\r\nDisallow: /a\r\n"},
		{"CR", "User-agent: heed\rDisallow: /a\r"},
		{"mixed endings, no final newline", "User-agent: heed\r\n\n\rDisallow: /a"},
		{"UTF-8 BOM", "\xEF\xBB\xBFUser-agent: heed\nDisallow: /a\n"},
		{"partial BOM", "\xEF\xBBUser-agent: heed\nDisallow: /a\n"},
		{"keys case-insensitive", "USER-AGENT: heed\ndisALLOW: /a\n"},
		{"whitespace everywhere", "  \tUser-agent \t:\t heed  \n   Disallow  :   /a \t \n"},
		{"comments", "# top\nUser-agent: heed # me\n# between\nDisallow: /a#b\n"},
		{"missing colon", "User-agent heed\nDisallow /a\n"},
		{"typo useragent", "useragent: heed\nDisallow: /a\n"},
		{"typo user agent", "user agent: heed\nDisallow: /a\n"},
		{"typo dissallow", "User-agent: heed\ndissallow: /a\n"},
		{"typo dissalow", "User-agent: heed\ndissalow: /a\n"},
		{"typo disalow", "User-agent: heed\ndisalow: /a\n"},
		{"typo diasllow", "User-agent: heed\ndiasllow: /a\n"},
		{"typo disallaw", "User-agent: heed\ndisallaw: /a\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := Parse([]byte(tc.body), "heed")
			require.Len(t, r.rules, 1, "one rule read")
			ok, rule := r.Allowed("/a")
			assert.False(t, ok)
			assert.Equal(t, "Disallow: /a", rule)
			checkAll(t, tc.body, "heed", want{"/b", true})
		})
	}
	rejected := []struct{ name, body string }{
		{"BOM in the middle of the file", "User-agent: heed\n\xEF\xBB\xBFDisallow: /a\n"},
		{"broken BOM", "\xEF\x11\xBFUser-agent: heed\nDisallow: /a\n"},
		{"missing colon with three words", "User-agent: heed\nDisallow /a /b\n"},
		{"unknown key", "User-agent: heed\nDisallowed: /a\n"},
		{"key prefix is not enough", "User-agent: heed\nDisallow-all: /a\n"},
		{"comment hides the rule", "User-agent: heed\n# Disallow: /a\n"},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			checkAll(t, tc.body, "heed", want{"/a", true})
		})
	}
}

func TestRobots_W4_OnlyMaxSizeParsed(t *testing.T) {
	head := "User-agent: heed\n"
	filler := "# " + strings.Repeat("x", 1000) + "\n"
	var b strings.Builder
	b.WriteString(head)
	for b.Len()+len(filler) < MaxSize-100 {
		b.WriteString(filler)
	}
	base := b.String()
	pad := func(n int) string { return "#" + strings.Repeat("x", n-2) + "\n" }

	t.Run("a rule ending exactly at the limit counts", func(t *testing.T) {
		rule := "Disallow: /a\n"
		body := base + pad(MaxSize-len(base)-len(rule)) + rule + "Disallow: /b\n"
		require.Len(t, body[:MaxSize], MaxSize)
		require.True(t, strings.HasSuffix(body[:MaxSize], rule))
		checkAll(t, body, "heed", want{"/a", false}, want{"/b", true})
	})
	t.Run("a rule whose newline is the first byte past the limit counts", func(t *testing.T) {
		rule := "Disallow: /a"
		body := base + pad(MaxSize-len(base)-len(rule)) + rule + "\nDisallow: /b\n"
		require.Equal(t, byte('\n'), body[MaxSize])
		checkAll(t, body, "heed", want{"/a", false}, want{"/b", true})
	})
	t.Run("a rule cut by the limit is dropped", func(t *testing.T) {
		// Cut to "Disallow: /a" the line would disallow /a; it must not
		// count at all.
		rule := "Disallow: /abc\n"
		body := base + pad(MaxSize-len(base)-len("Disallow: /a")) + rule
		require.Equal(t, "Disallow: /a", body[MaxSize-len("Disallow: /a"):MaxSize])
		checkAll(t, body, "heed", want{"/a", true}, want{"/abc", true})
	})
	t.Run("one huge line is dropped", func(t *testing.T) {
		body := head + "Disallow: /" + strings.Repeat("a", 2*MaxSize) + "\n"
		r := Parse([]byte(body), "heed")
		assert.Empty(t, r.rules)
	})
}

func TestRobots_W4_HugeGarbageIsCheap(t *testing.T) {
	rng := uint64(1)
	garbage := make([]byte, 10<<20)
	for i := range garbage {
		rng = rng*6364136223846793005 + 1442695040888963407
		garbage[i] = byte(rng >> 56)
	}
	colons := bytes.Repeat([]byte("Disallow:*:*$\n"), (10<<20)/14)
	var sitemaps, agents bytes.Buffer
	for i := 0; sitemaps.Len() < 10<<20; i++ {
		fmt.Fprintf(&sitemaps, "Sitemap: /s%d\n", i)
		fmt.Fprintf(&agents, "User-agent: a\nDisallow: /%d\n", i)
	}
	for name, body := range map[string][]byte{
		"random bytes":       garbage,
		"NULs":               make([]byte, 10<<20),
		"newlines":           bytes.Repeat([]byte("\n"), 10<<20),
		"rules without a ua": colons,
		"star rules":         append([]byte("User-agent: *\n"), colons...),
		"distinct sitemaps":  sitemaps.Bytes(),
		"many groups":        agents.Bytes(),
	} {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			r := Parse(body, "heed")
			r.Allowed("/" + strings.Repeat("a", 10000))
			_ = r.String()
			assert.Less(t, time.Since(start), 2*time.Second)
		})
	}
}
