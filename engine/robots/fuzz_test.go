package robots

import (
	"strings"
	"testing"
)

// FuzzParse parses arbitrary files and asks about arbitrary paths. It
// checks that nothing panics, that /robots.txt is always allowed, that
// AllowAll and DisallowAll mean what they say, that the product token is
// compared case-insensitively, and that Allowed decides as the longest
// matching rule (Allow on ties) does when every rule is checked with the
// reference matcher.
func FuzzParse(f *testing.F) {
	seeds := []struct{ body, path string }{
		{"User-agent: *\nDisallow: /\n", "/x"},
		{"User-agent: heed\nAllow: /a\nDisallow: /*.php$\nCrawl-delay: 0.5\n", "/a/b.php"},
		{"\xEF\xBB\xBFuser-agent heed\r\ndisallow /a%2fb\rallow: /a*b$\n", "/a%2Fb?x"},
		{"Sitemap: https://x/s.xml\nUser-agent: * x\nDisallow: /ツ\n", "/%E3%83%84#f"},
		{"User-agent: HEED/1\nDisallow: /%62%61%7A\nAllow: /robots.txt$\n", "/baz"},
		{"User-agent: *\nDisallow: /*a*a*a*a*b\n", "/aaaaaaaaaaaaaaaaaaaa"},
		{"Disallow: /\nUser-agent: other\nDisallow:\n", ""},
		{"User-agent: *\nDisallow: /path/file-with-a-%2A.html\n", "/path/file-with-a-*.html"},
	}
	for _, s := range seeds {
		f.Add([]byte(s.body), s.path)
	}
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		r := Parse(body, "heed")
		ok, rule := r.Allowed(path)
		_ = r.String()
		_ = r.Sitemaps()
		if d, has := r.CrawlDelay(); has && d < 0 {
			t.Fatalf("negative crawl-delay %v", d)
		}

		for _, q := range []string{"/robots.txt", "/robots.txt?" + path} {
			if ok, _ := r.Allowed(q); !ok {
				t.Fatalf("%q disallowed", q)
			}
		}
		if ok, _ := AllowAll().Allowed(path); !ok {
			t.Fatalf("AllowAll disallowed %q", path)
		}
		cp := canonicalPath(path)
		if ok, _ := DisallowAll().Allowed(path); ok != isRobotsTxt(cp) {
			t.Fatalf("DisallowAll says %v for %q", ok, path)
		}
		if canonical(cp) != cp {
			t.Fatalf("canonical form of %q is not a fixed point", path)
		}

		// Case of the agent does not matter.
		if ok2, rule2 := Parse(body, "HEED").Allowed(path); ok2 != ok || rule2 != rule {
			t.Fatalf("heed says %v %q, HEED says %v %q", ok, rule, ok2, rule2)
		}

		// Reference decision: among the rules that match, the longest
		// wins, Allow on ties; none matching allows.
		if isRobotsTxt(cp) {
			if !ok || rule != "" {
				t.Fatalf("/robots.txt decided by %q", rule)
			}
			return
		}
		best, bestAllow, bestRule := -1, true, ""
		for _, ru := range r.rules {
			if !refMatch(ru.pattern, cp) {
				continue
			}
			if ru.length > best || ru.length == best && ru.allow && !bestAllow {
				best, bestAllow, bestRule = ru.length, ru.allow, ru.line
			}
		}
		if ok != bestAllow {
			t.Fatalf("Allowed(%q) = %v by %q; reference says %v by %q", path, ok, rule, bestAllow, bestRule)
		}
		if (rule == "") != (best < 0) {
			t.Fatalf("Allowed(%q) rule %q; reference rule %q", path, rule, bestRule)
		}
		if rule != "" && !strings.HasPrefix(rule, "Allow: ") && !strings.HasPrefix(rule, "Disallow: ") {
			t.Fatalf("odd rule text %q", rule)
		}
	})
}
