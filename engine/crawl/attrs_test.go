package crawl

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCrawl_W2_Nofollow(t *testing.T) {
	cases := []struct {
		name, html string
		links      []string
		nofollow   int
	}{
		{"rel nofollow", `<a rel="nofollow" href="/n">`, []string{}, 1},
		{"rel NoFollow any case", `<a rel="NoFollow" href="/n">`, []string{}, 1},
		{"rel token list", `<a rel="noopener nofollow" href="/n">`, []string{}, 1},
		{"rel tokens with tabs and newlines", "<a rel=\"external\tNOFOLLOW\nnoreferrer\" href=/n>", []string{}, 1},
		{"rel nofollower is not nofollow", `<a rel="nofollower" href="/f">`, []string{"http://example.com/f"}, 0},
		{"rel ugc is followed", `<a rel="ugc sponsored" href="/f">`, []string{"http://example.com/f"}, 0},
		{"area nofollow", `<area rel=nofollow href="/n">`, []string{}, 1},
		{"link nofollow", `<link rel="nofollow" href="/n">`, []string{}, 1},
		{"followed elsewhere wins", `<a rel=nofollow href="/x"><a href="/x#again">`, []string{"http://example.com/x"}, 0},
		{"followed first wins", `<a href="/x"><a rel=nofollow href="/x">`, []string{"http://example.com/x"}, 0},
		{"distinct nofollow URLs counted once", `<a rel=nofollow href="/n"><a rel=nofollow href="/n#b"><a rel=nofollow href="/m">`, []string{}, 2},
		{"rel on img does not matter", `<img rel=nofollow src="/i.png">`, []string{"http://example.com/i.png"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := extract(t, tc.html, nil)
			assert.Equal(t, tc.links, linkURLs(p))
			assert.Equal(t, tc.nofollow, p.Nofollow)
			assert.False(t, p.NoFollowAll)
		})
	}
}

func TestCrawl_W2_MetaRobotsNofollow(t *testing.T) {
	const links = `<a href="/a">a</a><img src="/i.png"><a href="/b">b</a>`
	cases := []struct {
		name, meta string
		all        bool
	}{
		{"robots nofollow", `<meta name="robots" content="nofollow">`, true},
		{"robots noindex, nofollow", `<meta name="robots" content="noindex, nofollow">`, true},
		{"robots NOFOLLOW any case", `<meta name="ROBOTS" content="NoIndex,NOFOLLOW">`, true},
		{"robots none", `<meta name=robots content=none>`, true},
		{"robots space separated", `<meta name=robots content="noindex nofollow">`, true},
		{"our agent's meta", `<meta name="heed" content="nofollow">`, true},
		{"our agent any case", `<meta name="Heed" content="none">`, true},
		{"after the links", links + `<meta name=robots content=nofollow>`, true},
		{"another agent's meta", `<meta name="googlebot" content="nofollow">`, false},
		{"robots noindex only", `<meta name="robots" content="noindex">`, false},
		{"robots follow", `<meta name="robots" content="index, follow">`, false},
		{"content without name", `<meta content="nofollow">`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := extract(t, "<head>"+tc.meta+"</head><body>"+links, nil)
			assert.Equal(t, tc.all, p.NoFollowAll)
			if tc.all {
				assert.Empty(t, p.Links)
				assert.Equal(t, 3, p.Nofollow)
			} else {
				assert.Len(t, p.Links, 3)
				assert.Zero(t, p.Nofollow)
			}
		})
	}
}

func TestCrawl_W2_XRobotsTagNofollow(t *testing.T) {
	cases := []struct {
		name   string
		values []string
		all    bool
	}{
		{"general nofollow", []string{"nofollow"}, true},
		{"comma separated", []string{"noindex, nofollow"}, true},
		{"none", []string{"none"}, true},
		{"any case", []string{"NoFollow"}, true},
		{"agent-specific for us", []string{"heed: nofollow"}, true},
		{"agent-specific for us, any case", []string{"Heed: noindex, NOFOLLOW"}, true},
		{"agent-specific for another robot", []string{"googlebot: nofollow"}, false},
		{"another robot's list", []string{"otherbot: noindex, nofollow"}, false},
		{"another robot then general", []string{"otherbot: noarchive", "nofollow"}, true},
		{"switching robot inside one value", []string{"otherbot: nofollow, heed: nofollow"}, true},
		{"unavailable_after is not a robot", []string{"unavailable_after: 25 Jun 2030 15:00:00 PST, nofollow"}, true},
		{"max-snippet is not a robot", []string{"max-snippet: 20"}, false},
		{"noindex only", []string{"noindex"}, false},
		{"absent", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.values {
				h.Add("X-Robots-Tag", v)
			}
			p := extract(t, `<a href="/a">a</a>`, h)
			assert.Equal(t, tc.all, p.NoFollowAll)
			assert.Equal(t, tc.all, len(p.Links) == 0)
		})
	}
}

func TestCrawl_W2_MetaRefresh(t *testing.T) {
	cases := []struct {
		name, content string
		want          string // "" for none
	}{
		{"classic", "5; url=/next", "/next"},
		{"no space", "0;url=/next", "/next"},
		{"upper case URL", "5;URL=/next", "/next"},
		{"mixed case", "5; Url=/next", "/next"},
		{"spaces around equals", "5 ; url = /next", "/next"},
		{"single quotes", "5; url='/next'", "/next"},
		{"double quotes", `5; url="/next"`, "/next"},
		{"quote ends the URL", `5; url='/next' junk`, "/next"},
		{"unclosed quote", "5; url='/next", "/next"},
		{"comma separator", "5, url=/next", "/next"},
		{"space separator", "5 url=/next", "/next"},
		{"without url=", "5; /next", "/next"},
		{"fractional time", "0.5; url=/next", "/next"},
		{"leading dot time", ".5; url=/next", "/next"},
		{"leading space", "  3;url=/n", "/n"},
		{"url without equals is the URL", "5; url /next", "url /next"},
		{"ur is the URL", "5; ur/next", "ur/next"},
		{"time only", "5", ""},
		{"time and separator only", "5; ", ""},
		{"no time", "url=/next", ""},
		{"junk after time", "5x; url=/next", ""},
		{"empty", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseRefresh(tc.content)
			if tc.want == "" {
				assert.False(t, ok, "got %q", got)
				return
			}
			require.True(t, ok)
			assert.Equal(t, tc.want, got)
		})
	}
	p := extract(t, `<meta http-equiv="refresh" content="0; URL='next.html'">`, nil)
	assert.Equal(t, []string{"http://example.com/dir/next.html"}, linkURLs(p))
}

func TestCrawl_W2_Srcset(t *testing.T) {
	cases := []struct {
		name, srcset string
		want         []string
	}{
		{"single", "a.jpg", []string{"a.jpg"}},
		{"density", "a.jpg 1x, b.jpg 2x", []string{"a.jpg", "b.jpg"}},
		{"width", "s.jpg 320w, m.jpg 640w, l.jpg 1024w", []string{"s.jpg", "m.jpg", "l.jpg"}},
		{"comma inside a URL", "a,b.jpg 2x", []string{"a,b.jpg"}},
		{"comma without space is one URL", "a.jpg,b.jpg", []string{"a.jpg,b.jpg"}},
		{"trailing comma ends the URL", "a.jpg, b.jpg", []string{"a.jpg", "b.jpg"}},
		{"several trailing commas", "a.jpg,,, b.jpg", []string{"a.jpg", "b.jpg"}},
		{"descriptor ends at comma", "a.jpg 2x,b.jpg 3x", []string{"a.jpg", "b.jpg"}},
		{"leading commas and spaces", " ,, a.jpg 1x", []string{"a.jpg"}},
		{"newlines between candidates", "a.jpg 1x,\n  b.jpg 2x\n", []string{"a.jpg", "b.jpg"}},
		{"data URL with comma", "data:image/png;base64,AAAA 1x, c.png 2x", []string{"data:image/png;base64,AAAA", "c.png"}},
		{"fractional density", "a.jpg 1.5x", []string{"a.jpg"}},
		{"width and future height", "a.jpg 100w 50h", []string{"a.jpg"}},
		{"parens keep commas", "a.jpg (x, y) 1x, b.jpg", []string{"b.jpg"}},
		{"invalid descriptor dropped", "a.jpg 2q, b.jpg 1x", []string{"b.jpg"}},
		{"two densities dropped", "a.jpg 1x 2x, b.jpg", []string{"b.jpg"}},
		{"width and density dropped", "a.jpg 100w 2x, b.jpg", []string{"b.jpg"}},
		{"zero width dropped", "a.jpg 0w, b.jpg", []string{"b.jpg"}},
		{"negative density dropped", "a.jpg -1x, b.jpg", []string{"b.jpg"}},
		{"height without width dropped", "a.jpg 50h, b.jpg", []string{"b.jpg"}},
		{"upper-case X is invalid", "a.jpg 2X, b.jpg", []string{"b.jpg"}},
		{"empty", "", nil},
		{"only commas", ", ,", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, parseSrcset(tc.srcset))
		})
	}
	p := extract(t, `<img src="/fallback.jpg" srcset="/a,b.jpg 1x, /c.jpg 2x, /fallback.jpg 3x">`, nil)
	assert.Equal(t, []string{"http://example.com/fallback.jpg", "http://example.com/a,b.jpg", "http://example.com/c.jpg"}, linkURLs(p))
	assert.Equal(t, "img src", p.Links[0].Source)
	assert.Equal(t, "img srcset", p.Links[1].Source)
}
