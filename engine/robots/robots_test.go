package robots

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// want is one expectation: path is allowed or not.
type want struct {
	path string
	ok   bool
}

// checkAll asserts every expectation for body parsed for agent.
func checkAll(t *testing.T, body, agent string, wants ...want) {
	t.Helper()
	r := Parse([]byte(body), agent)
	for _, w := range wants {
		ok, rule := r.Allowed(w.path)
		assert.Equal(t, w.ok, ok, "agent %q path %q (rule %q)", agent, w.path, rule)
	}
}

func TestRobots_W4_RFCPercentEncodingExamples(t *testing.T) {
	// RFC 9309 §2.2.2: the path as written, its encoded form, and what is
	// compared. A rule written either way matches a URI sent either way.
	cases := []struct{ name, path, encoded, compared string }{
		{"plain query", "/foo/bar?baz=quz", "/foo/bar?baz=quz", "/foo/bar?baz=quz"},
		{"encoded reserved in the query", "/foo/bar?baz=https%3A%2F%2Ffoo.bar", "/foo/bar?baz=https%3A%2F%2Ffoo.bar", "/foo/bar?baz=https%3A%2F%2Ffoo.bar"},
		{"UTF-8", "/foo/bar/ツ", "/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84"},
		{"percent-encoded UTF-8", "/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84"},
		{"percent-encoded unreserved", "/foo/bar/%62%61%7A", "/foo/bar/%62%61%7A", "/foo/bar/baz"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.compared, canonical(tc.path))
			assert.Equal(t, tc.compared, canonical(tc.encoded))
			for _, pattern := range []string{tc.path, tc.encoded, tc.compared} {
				body := "User-agent: *\nDisallow: /\nAllow: " + pattern + "\n"
				for _, uri := range []string{tc.encoded, tc.compared} {
					ok, rule := Parse([]byte(body), "heed").Allowed(uri)
					assert.True(t, ok, "rule %q uri %q", pattern, uri)
					assert.Equal(t, "Allow: "+pattern, rule)
				}
				checkAll(t, body, "heed", want{"/foo/bar/other", false})
			}
		})
	}
	t.Run("literal reserved characters are not their escapes", func(t *testing.T) {
		body := "User-agent: *\nDisallow: /foo/bar?baz=https://foo.bar\n"
		checkAll(t, body, "heed",
			want{"/foo/bar?baz=https://foo.bar", false},
			want{"/foo/bar?baz=https%3A%2F%2Ffoo.bar", true})
	})
}

func TestRobots_W4_RFCSpecialCharacterExamples(t *testing.T) {
	// RFC 9309 §2.2.3.
	cases := []struct {
		name, body string
		wants      []want
	}{
		{"# starts a comment", "User-agent: *\nDisallow: /\nallow: / # comment in line\n\n# comment on its own line\n",
			[]want{{"/anything", true}}},
		{"$ ends the pattern", "User-agent: *\nDisallow: /\nallow: /this/path/exactly$\n",
			[]want{{"/this/path/exactly", true}, {"/this/path/exactly/", false}, {"/this/path/exactlyx", false}, {"/this/path/exactly?q", false}}},
		{"* is any run of characters", "User-agent: *\nDisallow: /\nallow: /this/*/exactly\n",
			[]want{{"/this/a/exactly", true}, {"/this//exactly", true}, {"/this/a/b/exactly/x", true}, {"/this/exactly", false}}},
		{"%2A matches a literal *", "User-agent: *\nDisallow: /path/file-with-a-%2A.html\n",
			[]want{{"/path/file-with-a-*.html", false}, {"/path/file-with-a-%2A.html", false}, {"/path/file-with-a-x.html", true}}},
		{"%24 matches a literal $", "User-agent: *\nDisallow: /path/foo-%24\n",
			[]want{{"/path/foo-$", false}, {"/path/foo-%24", false}, {"/path/foo-", true}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkAll(t, tc.body, "heed", tc.wants...) })
	}
}

func TestRobots_W4_RFCExamples(t *testing.T) {
	// RFC 9309 §5.1, the simple example.
	simple := "User-Agent: *\nDisallow: *.gif$\nDisallow: /example/\nAllow: /publications/\n\n" +
		"User-Agent: foobot\nDisallow:/\nAllow:/example/page.html\nAllow:/example/allowed.gif\n\n" +
		"User-Agent: barbot\nUser-Agent: bazbot\nDisallow: /example/page.html\n\n" +
		"User-Agent: quxbot\n\nEOF\n"
	cases := []struct {
		name, body, agent string
		wants             []want
	}{
		{"5.1 foobot", simple, "foobot", []want{
			{"/example/page.html", true}, {"/example/allowed.gif", true},
			{"/", false}, {"/example/other.html", false}, {"/publications/", false}}},
		{"5.1 barbot", simple, "barbot", []want{
			{"/example/page.html", false}, {"/example/other.html", true}, {"/a.gif", true}}},
		{"5.1 bazbot shares barbot's group", simple, "bazbot", []want{
			{"/example/page.html", false}, {"/example/other.html", true}}},
		{"5.1 quxbot's empty group allows all", simple, "quxbot", []want{
			{"/example/page.html", true}, {"/a.gif", true}}},
		{"5.1 anyone else gets *", simple, "heed", []want{
			{"/example/page.html", false}, {"/example/", false}, {"/a.gif", false},
			{"/a.gif?x=1", true}, {"/publications/a.html", true}, {"/publications/b.gif", true}, {"/other", true}}},
		{"5.2 longest match", "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n", "foobot", []want{
			{"/example/page/", true}, {"/example/page/other.gif", true}, {"/example/page/disallowed.gif", false}}},
		{"2.2.1 groups of one agent merge", "user-agent: ExampleBot\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: ExampleBot\ndisallow: /baz\n", "examplebot", []want{
			{"/foo", false}, {"/bar", false}, {"/baz", false}, {"/qux", true}}},
		{"2.2.2 robots.txt implicitly allowed", "User-agent: *\nDisallow: /\n", "heed", []want{
			{"/robots.txt", true}, {"/", false}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkAll(t, tc.body, tc.agent, tc.wants...) })
	}
}

func TestRobots_W4_LongestMatchWins(t *testing.T) {
	cases := []struct {
		name, body string
		path       string
		ok         bool
		rule       string
	}{
		{"longer disallow beats allow", "Disallow: /x/page.html\nAllow: /x/", "/x/page.html", false, "Disallow: /x/page.html"},
		{"longer allow beats disallow", "Allow: /x/page.html\nDisallow: /x/", "/x/page.html", true, "Allow: /x/page.html"},
		{"order does not matter", "Disallow: /x/\nAllow: /x/page.html", "/x/page.html", true, "Allow: /x/page.html"},
		{"shorter allow loses to longer wildcard", "Allow: /page\nDisallow: /*.html", "/page.html", false, "Disallow: /*.html"},
		{"wildcard counts its star", "Allow: /x/page.\nDisallow: /*.html", "/x/page.html", true, "Allow: /x/page."},
		{"only matching rules count", "Disallow: /x\nAllow: /x/", "/x", false, "Disallow: /x"},
		{"length is canonical", "Allow: /%70ag\nDisallow: /page", "/page", false, "Disallow: /page"},
		{"encoded octets are longer", "Allow: /caf%C3%A9\nDisallow: /caf*", "/café", true, "Allow: /caf%C3%A9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, rule := Parse([]byte("User-agent: heed\n"+tc.body+"\n"), "heed").Allowed(tc.path)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.rule, rule)
		})
	}
}

func TestRobots_W4_AllowWinsTies(t *testing.T) {
	cases := []struct{ name, body, rule string }{
		{"same pattern, allow last", "Disallow: /\nAllow: /", "Allow: /"},
		{"same pattern, allow first", "Allow: /\nDisallow: /", "Allow: /"},
		{"same long pattern", "Disallow: /x/page.html\nAllow: /x/page.html", "Allow: /x/page.html"},
		{"different patterns of equal length", "Disallow: /*.html\nAllow: /x/page", "Allow: /x/page"},
		{"equal after canonicalisation", "Disallow: /x/page.html\nAllow: /x/page%2Ehtml", "Allow: /x/page%2Ehtml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, rule := Parse([]byte("User-agent: *\n"+tc.body+"\n"), "heed").Allowed("/x/page.html")
			assert.True(t, ok)
			assert.Equal(t, tc.rule, rule)
		})
	}
}

func TestRobots_W4_EmptyDisallowMatchesNothing(t *testing.T) {
	checkAll(t, "User-agent: heed\nDisallow:\n", "heed", want{"/", true}, want{"/x", true})
	checkAll(t, "User-agent: heed\nDisallow: \t \nAllow:\n", "heed", want{"/x", true})
	// The group still exists, so * does not apply to heed.
	checkAll(t, "User-agent: *\nDisallow: /\n\nUser-agent: heed\nDisallow:\n", "heed", want{"/x", true})
	assert.Equal(t, "allow all", Parse([]byte("User-agent: heed\nDisallow:\n"), "heed").String())
}

func TestRobots_W4_PatternWithoutLeadingSlashMatchesNothing(t *testing.T) {
	// As google/robotstxt: patterns are anchored at the start of the path.
	body := "User-agent: *\nDisallow: private/\nDisallow: $\nDisallow: ?x\nDisallow: http://example.com/a\nDisallow: *secret\n"
	checkAll(t, body, "heed",
		want{"/private/", true}, want{"/", true}, want{"/?x", true}, want{"/a", true},
		want{"/top-secret", false}) // a leading * is fine
	assert.Equal(t, "1 rule for *", Parse([]byte(body), "heed").String())
}

func TestRobots_W4_MatchIsCaseSensitive(t *testing.T) {
	checkAll(t, "User-agent: *\nDisallow: /X/\n", "heed", want{"/x/y", true}, want{"/X/y", false})
	checkAll(t, "User-agent: *\nDisallow: /%aa\n", "heed", want{"/%AA", false}, want{"/%aa", false})
}

func TestRobots_W4_RobotsTxtAlwaysAllowed(t *testing.T) {
	for _, body := range []string{
		"User-agent: *\nDisallow: /\n",
		"User-agent: *\nDisallow: /robots.txt\n",
		"User-agent: *\nDisallow: /robots.txt$\nDisallow: /*.txt\n",
	} {
		r := Parse([]byte(body), "heed")
		for _, p := range []string{"/robots.txt", "/robots.txt?x=1", "/robots%2etxt", "/robots.txt#f"} {
			ok, rule := r.Allowed(p)
			assert.True(t, ok, "%q in %q", p, body)
			assert.Empty(t, rule)
		}
		ok, _ := r.Allowed("/robots.txt/x")
		assert.False(t, ok, "only the file itself")
	}
	ok, _ := DisallowAll().Allowed("/robots.txt")
	assert.True(t, ok)
}

func TestRobots_W4_Verdict(t *testing.T) {
	body := []byte("User-agent: *\nDisallow: /private/\n")
	cases := []struct {
		name      string
		status    int
		temporary bool
		private   bool // /private/x allowed
		public    bool // /public allowed
	}{
		{"200 parses", 200, false, false, true},
		{"299 parses", 299, false, false, true},
		{"301 after too many redirects: unavailable", 301, false, true, true},
		{"404 allows all", 404, false, true, true},
		{"401 allows all", 401, false, true, true},
		{"403 allows all", 403, false, true, true},
		{"410 allows all", 410, false, true, true},
		{"429 disallows all for now", 429, true, false, false},
		{"500 disallows all for now", 500, true, false, false},
		{"503 disallows all for now", 503, true, false, false},
		{"599 disallows all for now", 599, true, false, false},
		{"network error disallows all for now", 0, true, false, false},
		{"1xx is not a result", 100, true, false, false},
		{"nonsense status", 999, true, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, temporary := Verdict(tc.status, body, "heed")
			require.NotNil(t, r)
			assert.Equal(t, tc.temporary, temporary)
			ok, _ := r.Allowed("/private/x")
			assert.Equal(t, tc.private, ok, "/private/x")
			ok, _ = r.Allowed("/public")
			assert.Equal(t, tc.public, ok, "/public")
			ok, _ = r.Allowed("/robots.txt")
			assert.True(t, ok, "/robots.txt")
		})
	}
}

func TestRobots_W4_AllowAllDisallowAll(t *testing.T) {
	for _, p := range []string{"/", "/x", "/robots.txt/x", "/a?b", ""} {
		ok, rule := AllowAll().Allowed(p)
		assert.True(t, ok, p)
		assert.Empty(t, rule)
		ok, rule = DisallowAll().Allowed(p)
		assert.False(t, ok, p)
		assert.Equal(t, "Disallow: /", rule)
	}
	var nilRules *Rules
	ok, _ := nilRules.Allowed("/x")
	assert.True(t, ok, "nil Rules allow all")
	ok, _ = (&Rules{}).Allowed("/x")
	assert.True(t, ok, "zero Rules allow all")
	_, has := nilRules.CrawlDelay()
	assert.False(t, has)
	assert.Nil(t, nilRules.Sitemaps())
	assert.Equal(t, "allow all", nilRules.String())
}

func TestRobots_W5_CrawlDelay(t *testing.T) {
	cases := []struct {
		name, value string
		want        time.Duration
		ok          bool
	}{
		{"seconds", "5", 5 * time.Second, true},
		{"zero", "0", 0, true},
		{"fraction", "0.5", 500 * time.Millisecond, true},
		{"fraction without whole part", ".25", 250 * time.Millisecond, true},
		{"trailing point", "2.", 2 * time.Second, true},
		{"exact decimal", "1.1", 1100 * time.Millisecond, true},
		{"beyond nanoseconds truncated", "0.0000000019", 1, true},
		{"spaces trimmed", " \t10 ", 10 * time.Second, true},
		{"huge saturates", "99999999999999999999", math.MaxInt64, true},
		{"just over the limit saturates", "9223372036.9", math.MaxInt64, true},
		{"negative ignored", "-1", 0, false},
		{"plus ignored", "+1", 0, false},
		{"unit ignored", "5s", 0, false},
		{"exponent ignored", "1e3", 0, false},
		{"two points ignored", "1.2.3", 0, false},
		{"comma ignored", "0,5", 0, false},
		{"lone point ignored", ".", 0, false},
		{"empty ignored", "", 0, false},
		{"inf ignored", "inf", 0, false},
		{"NaN ignored", "NaN", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := Parse([]byte("User-agent: heed\nCrawl-delay: "+tc.value+"\n"), "heed").CrawlDelay()
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, d)
		})
	}
	groups := []struct {
		name, body string
		want       time.Duration
		ok         bool
	}{
		{"from heed's group, not *'s", "User-agent: *\nCrawl-delay: 9\n\nUser-agent: heed\nCrawl-delay: 2\nDisallow: /x\n", 2 * time.Second, true},
		{"from * when it applies", "User-agent: *\nCrawl-delay: 9\n\nUser-agent: other\nCrawl-delay: 2\n", 9 * time.Second, true},
		{"none when heed's group has none", "User-agent: *\nCrawl-delay: 9\n\nUser-agent: heed\nDisallow: /x\n", 0, false},
		{"the first in a group", "User-agent: heed\nCrawl-delay: 3\nCrawl-delay: 7\n", 3 * time.Second, true},
		{"the first valid one", "User-agent: heed\nCrawl-delay: soon\nCrawl-delay: 7\n", 7 * time.Second, true},
		{"the first of merged groups", "User-agent: heed\nDisallow: /a\nUser-agent: x\nCrawl-delay: 1\nUser-agent: heed\nCrawl-delay: 4\nUser-agent: heed\nCrawl-delay: 6\n", 4 * time.Second, true},
		{"before any user-agent ignored", "Crawl-delay: 3\nUser-agent: heed\nDisallow: /\n", 0, false},
		{"shared by the user-agent run", "User-agent: other\nUser-agent: heed\nCrawl-delay: 5\nDisallow: /\n", 5 * time.Second, true},
		{"belongs to the group above it", "User-agent: other\nCrawl-delay: 5\nUser-agent: heed\nDisallow: /\n", 0, false},
		{"typo crawldelay", "User-agent: heed\ncrawldelay: 8\n", 8 * time.Second, true},
		{"key case-insensitive", "User-agent: heed\nCRAWL-DELAY: 8\n", 8 * time.Second, true},
	}
	for _, tc := range groups {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := Parse([]byte(tc.body), "heed").CrawlDelay()
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, d)
		})
	}
}

func TestRobots_W5_Sitemaps(t *testing.T) {
	body := "Sitemap: https://example.com/before.xml\n" +
		"User-agent: other\nSitemap: https://example.com/in-other.xml\nDisallow: /\n" +
		"User-agent: heed\nsitemap:https://example.com/in-heed.xml # comment\nDisallow: /x\n" +
		"Site-map: https://example.com/typo.xml\n" +
		"Sitemap: https://example.com/before.xml\n" + // duplicate
		"Sitemap:\n" + // empty
		"Sitemap: /relative.xml\n"
	sitemaps := []string{
		"https://example.com/before.xml",
		"https://example.com/in-other.xml",
		"https://example.com/in-heed.xml",
		"https://example.com/typo.xml",
		"/relative.xml",
	}
	for _, agent := range []string{"heed", "other", "nobody"} {
		r := Parse([]byte(body), agent)
		assert.Equal(t, sitemaps, r.Sitemaps(), agent)
	}
	r := Parse([]byte(body), "heed")
	r.Sitemaps()[0] = "changed"
	assert.Equal(t, sitemaps[0], r.Sitemaps()[0], "Sitemaps returns a copy")
	checkAll(t, body, "heed", want{"/x", false}, want{"/y", true})
}

func TestRobots_String(t *testing.T) {
	cases := []struct{ name, body, agent, want string }{
		{"rules for heed with delay", "User-agent: heed\nDisallow: /a\nDisallow: /b\nAllow: /a/c\nCrawl-delay: 5\n", "heed", "3 rules for heed, crawl-delay 5s"},
		{"one rule for *", "User-agent: *\nDisallow: /a\n", "heed", "1 rule for *"},
		{"fractional delay", "User-agent: *\nDisallow: /a\nCrawl-delay: 0.5\n", "heed", "1 rule for *, crawl-delay 500ms"},
		{"no rules", "", "heed", "allow all"},
		{"delay only", "User-agent: heed\nCrawl-delay: 2\n", "heed", "allow all, crawl-delay 2s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Parse([]byte(tc.body), tc.agent).String())
		})
	}
	assert.Equal(t, "allow all", AllowAll().String())
	assert.Equal(t, "disallow all", DisallowAll().String())
}
