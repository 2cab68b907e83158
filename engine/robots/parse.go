package robots

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"time"
)

// Parse reads a robots.txt body and keeps what applies to agent.
//
// agent is a product token such as "heed" (anything after it, as in
// "heed/1.0", is ignored). Each user-agent line names a product token too,
// and the two are compared case-insensitively, whole: "HEED" and "heed/2"
// name heed, "heedbot" does not. The rules of every group that names agent
// apply, merged into one (RFC 9309 §2.2.1); if no group names it, those of
// every "*" group do; if there is no "*" group either, everything is
// allowed.
//
// Only the first MaxSize bytes of body are read. Parse never fails: lines
// it does not understand, and rules before the first user-agent line, are
// skipped and the rest of the file still counts.
func Parse(body []byte, agent string) *Rules {
	p := parser{agent: productToken(strings.TrimLeft(agent, " \t"))}
	text := stripBOM(string(clip(body)))
	for text != "" {
		var line string
		if i := strings.IndexAny(text, "\r\n"); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			line, text = text, ""
		}
		p.line(line)
	}
	return p.rules()
}

// clip cuts body to MaxSize bytes, dropping a line that the cut would split.
func clip(body []byte) []byte {
	if len(body) <= MaxSize {
		return body
	}
	if c := body[MaxSize]; c == '\n' || c == '\r' {
		return body[:MaxSize] // the cut falls right at the end of a line
	}
	return body[:bytes.LastIndexAny(body[:MaxSize], "\r\n")+1]
}

// stripBOM drops a UTF-8 byte order mark, or the start of one, from the
// start of the file.
func stripBOM(s string) string {
	const bom = "\xEF\xBB\xBF"
	for n := len(bom); n > 0; n-- {
		if strings.HasPrefix(s, bom[:n]) {
			return s[n:]
		}
	}
	return s
}

// A group is one user-agent group of the file (RFC 9309 §2.1): the
// user-agent lines that open it and the lines up to the next group.
type group struct {
	named    bool // a user-agent line names the parser's agent
	anyone   bool // a user-agent line says "*"
	rules    []rawRule
	delay    time.Duration
	hasDelay bool
}

// A rawRule is an Allow or Disallow line of a group, compiled only if the
// group applies.
type rawRule struct {
	allow bool
	value string
}

// parser holds the state of one Parse.
type parser struct {
	agent    string   // the product token rules are kept for
	groups   []*group // in file order
	cur      *group   // the group lines belong to; nil before any user-agent
	agents   bool     // cur is still in its run of user-agent lines
	sitemaps []string
	seen     map[string]bool // the sitemaps, to drop duplicates
}

// line handles one line of the file, without its line ending.
func (p *parser) line(text string) {
	key, value, ok := splitLine(text)
	if !ok {
		return
	}
	kind := keyKind(key)
	switch kind {
	case userAgent:
		if !p.agents {
			p.cur = &group{}
			p.groups = append(p.groups, p.cur)
			p.agents = true
		}
		tok, star := agentToken(value)
		p.cur.anyone = p.cur.anyone || star
		p.cur.named = p.cur.named || tok != "" && strings.EqualFold(tok, p.agent)
	case allow, disallow:
		if p.cur == nil {
			return // before any user-agent line: in no group, ignored
		}
		p.agents = false
		if value == "" || value[0] != '/' && value[0] != '*' {
			return // matches nothing; see the package doc
		}
		p.cur.rules = append(p.cur.rules, rawRule{allow: kind == allow, value: value})
	case crawlDelay:
		if p.cur == nil {
			return
		}
		p.agents = false // a member of the group, like a rule
		if !p.cur.hasDelay {
			p.cur.delay, p.cur.hasDelay = parseDelay(value)
		}
	case sitemap:
		if value == "" || p.seen[value] {
			return
		}
		if p.seen == nil {
			p.seen = make(map[string]bool)
		}
		value = strings.Clone(value) // don't pin the whole file
		p.seen[value] = true
		p.sitemaps = append(p.sitemaps, value)
	}
}

// rules gathers what applies to the agent once the whole file is read.
func (p *parser) rules() *Rules {
	r := &Rules{sitemaps: p.sitemaps}
	applies := func(g *group) bool { return g.named }
	r.group = p.agent
	if !slices.ContainsFunc(p.groups, applies) {
		applies = func(g *group) bool { return g.anyone }
		r.group = "*"
	}
	for _, g := range p.groups {
		if !applies(g) {
			continue
		}
		for _, l := range g.rules {
			ru := rule{pattern: compile(l.value), allow: l.allow, line: "Disallow: " + l.value}
			if l.allow {
				ru.line = "Allow: " + l.value
			}
			r.rules = append(r.rules, ru)
		}
		if g.hasDelay && !r.hasDelay {
			r.delay, r.hasDelay = g.delay, true
		}
	}
	slices.SortStableFunc(r.rules, func(a, b rule) int {
		if a.length != b.length {
			return b.length - a.length // longer first
		}
		switch {
		case a.allow == b.allow:
			return 0
		case a.allow:
			return -1
		default:
			return 1
		}
	})
	r.pairs = make([]pairSet, len(r.rules))
	for i := range r.rules {
		r.pairs[i] = r.rules[i].pairs()
	}
	return r
}

// splitLine takes a line apart into key and value, both trimmed, after
// dropping its comment. ok is false for blank and comment-only lines and
// for lines without a key. A line with no colon but exactly two words
// ("Disallow /tmp") is read as if the colon were there.
func splitLine(line string) (key, value string, ok bool) {
	if i := strings.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	line = trimSpace(line)
	if i := strings.IndexByte(line, ':'); i >= 0 {
		key, value = trimSpace(line[:i]), trimSpace(line[i+1:])
		return key, value, key != ""
	}
	i := strings.IndexAny(line, " \t\v\f")
	if i < 0 {
		return "", "", false
	}
	key, value = line[:i], trimSpace(line[i:])
	return key, value, !strings.ContainsAny(value, " \t\v\f")
}

func trimSpace(s string) string { return strings.Trim(s, " \t\v\f") }

// The kinds of line Parse acts on.
const (
	unknown = iota
	userAgent
	allow
	disallow
	sitemap
	crawlDelay
)

// keys spells each kind of line, with the misspellings that are accepted.
var keys = []struct {
	name string
	kind int
}{
	{"user-agent", userAgent}, {"useragent", userAgent}, {"user agent", userAgent},
	{"allow", allow},
	{"disallow", disallow}, {"dissallow", disallow}, {"dissalow", disallow},
	{"disalow", disallow}, {"diasllow", disallow}, {"disallaw", disallow},
	{"sitemap", sitemap}, {"site-map", sitemap},
	{"crawl-delay", crawlDelay}, {"crawldelay", crawlDelay}, {"crawl delay", crawlDelay},
}

// keyKind tells which kind of line key starts, case-insensitively.
func keyKind(key string) int {
	for _, k := range keys {
		if len(k.name) == len(key) && strings.EqualFold(k.name, key) {
			return k.kind
		}
	}
	return unknown
}

// isTokenChar reports whether c may appear in a product token (RFC 9309
// §2.2.1: letters, "_" and "-").
func isTokenChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '-'
}

// productToken returns the product token that s starts with.
func productToken(s string) string {
	i := 0
	for i < len(s) && isTokenChar(s[i]) {
		i++
	}
	return s[:i]
}

// agentToken reads the value of a user-agent line: star is true for "*"
// (alone or followed by a space and anything), else tok is its product
// token, possibly empty.
func agentToken(v string) (tok string, star bool) {
	if v == "*" || len(v) > 1 && v[0] == '*' && (v[1] == ' ' || v[1] == '\t') {
		return "", true
	}
	return productToken(v), false
}

// parseDelay reads a Crawl-delay value: decimal seconds with an optional
// fraction ("5", "0.5", "2.", ".25"). Digits past nanoseconds are dropped and
// a huge value saturates; anything else is not a delay.
func parseDelay(v string) (time.Duration, bool) {
	whole, frac, _ := strings.Cut(v, ".")
	if whole == "" && frac == "" || !isDigits(whole) || !isDigits(frac) {
		return 0, false
	}
	const maxSeconds = math.MaxInt64 / int64(time.Second)
	var secs int64
	for i := 0; i < len(whole); i++ {
		secs = secs*10 + int64(whole[i]-'0')
		if secs > maxSeconds {
			return math.MaxInt64, true
		}
	}
	var nanos int64
	for i := range 9 {
		nanos *= 10
		if i < len(frac) {
			nanos += int64(frac[i] - '0')
		}
	}
	d := secs * int64(time.Second)
	if nanos > math.MaxInt64-d {
		return math.MaxInt64, true
	}
	return time.Duration(d + nanos), true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
