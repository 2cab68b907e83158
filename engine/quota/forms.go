package quota

import (
	"bytes"
	"net/http"
	"time"

	"github.com/dunglas/httpsfv"
)

// currentForm reads the draft-08-and-later fields: RateLimit-Policy items
// (name;q;w;qu;pk) and RateLimit items (name;r;t;pk), both Lists whose
// items are named by a String (a Token is accepted too, as draft-08 allowed).
//
// A RateLimit item is joined to the first RateLimit-Policy item of the same
// name whose partition key (pk) agrees with its own (the same bytes, or
// either side without one) and that no earlier RateLimit item took; one with
// no such policy stands alone, counting requests, the draft's default unit.
// Policies come in RateLimit-Policy order, then the lone RateLimit items.
func currentForm(h http.Header) []Policy {
	type entry struct {
		p      Policy
		pk     []byte
		joined bool
	}
	var all []*entry
	for _, it := range namedItems(sfList(h, "RateLimit-Policy")) {
		p := unstated(it.name)
		if q, ok := paramInt(it.params, "q", 0); ok {
			p.Limit = q
		}
		if w, ok := paramInt(it.params, "w", 1); ok {
			p.Window = wholeSeconds(w, MaxWindow)
		}
		p.Unit = paramUnit(it.params)
		all = append(all, &entry{p: p, pk: paramBytes(it.params, "pk")})
	}
	policies := len(all)
	for _, it := range namedItems(sfList(h, "RateLimit")) {
		r, rok := paramInt(it.params, "r", 0)
		t, tok := paramInt(it.params, "t", 0)
		if !rok && !tok {
			continue
		}
		pk := paramBytes(it.params, "pk")
		var e *entry
		for _, c := range all[:policies] {
			if !c.joined && c.p.Name == it.name && (c.pk == nil || pk == nil || bytes.Equal(c.pk, pk)) {
				e = c
				break
			}
		}
		if e == nil {
			e = &entry{p: unstated(it.name)}
			all = append(all, e)
		}
		e.joined = true
		if rok {
			e.p.Remaining = r
		}
		if tok {
			e.p.ResetIn = wholeSeconds(t, MaxReset)
		}
	}
	var out []Policy
	for _, e := range all {
		if usable(e.p) {
			out = append(out, e.p)
		}
	}
	return out
}

// draft07Form reads the draft-07 RateLimit Dictionary: limit, remaining and
// reset, each an Integer (reset in seconds). Parameters on them are ignored,
// as the draft says. ok is false when none of the three is usable.
func draft07Form(h http.Header) (Policy, bool) {
	v := h.Values("RateLimit")
	if len(v) == 0 {
		return Policy{}, false
	}
	d, err := httpsfv.UnmarshalDictionary(v)
	if err != nil {
		return Policy{}, false
	}
	p := unstated("")
	if n, ok := dictInt(d, "limit"); ok {
		p.Limit = n
	}
	if n, ok := dictInt(d, "remaining"); ok {
		p.Remaining = n
	}
	if n, ok := dictInt(d, "reset"); ok {
		p.ResetIn = wholeSeconds(n, MaxReset)
	}
	return p, usable(p)
}

// threeFieldForm reads RateLimit-Limit, RateLimit-Remaining and
// RateLimit-Reset. RateLimit-Limit is a List whose first member is the
// current limit and whose further members are policies like those of an
// Integer RateLimit-Policy (drafts up to 05); in draft-06 it is a single
// Integer, which parses as a List of one. The others are Integer Items.
//
// RateLimit-Reset is seconds from the response in the drafts, but GitLab
// sends a Unix time there, so it is read like X-RateLimit-Reset: above 10^9
// it is a Unix time, measured against at (the response's Date). A delay of
// 10^9 seconds (31 years) would be capped to MaxReset anyway, so no real
// delay is misread.
//
// older are the policies of an Integer RateLimit-Policy field.
func threeFieldForm(h http.Header, at time.Time, older []Policy) []Policy {
	p := unstated("")
	var more []Policy
	if l := sfList(h, "RateLimit-Limit"); len(l) > 0 {
		if n, ok := itemInt(l[0]); ok {
			p.Limit = n
		}
		more = integerPolicies(l[1:])
	}
	if n, ok := sfItemInt(h, "RateLimit-Remaining"); ok {
		p.Remaining = n
	}
	if n, ok := sfItemInt(h, "RateLimit-Reset"); ok {
		p.ResetIn = resetIn(number{whole: n}, at, true)
	}
	if !usable(p) && len(more) == 0 {
		return nil // none of its own fields states anything: older alone is draft-07
	}
	for _, o := range older {
		if !containsPolicy(more, o) {
			more = append(more, o)
		}
	}
	if !usable(p) {
		return more
	}
	return withPolicies(p, more)
}

// xForm reads X-RateLimit-Limit, -Remaining, -Reset and -Reset-After, or,
// when those state nothing, the same fields spelled X-Rate-Limit-*.
// Reset-After (seconds from the response, Discord) is preferred to Reset,
// since it needs no clock. Reset is seconds from the response, or a Unix
// time above 10^9 (GitHub, Discord): see resetIn.
func xForm(h http.Header, at time.Time) (Policy, bool) {
	for _, prefix := range [...]string{"X-Ratelimit-", "X-Rate-Limit-"} {
		p := unstated("")
		if n, ok := xNumber(h, prefix+"Limit"); ok {
			p.Limit = n.whole
		}
		if n, ok := xNumber(h, prefix+"Remaining"); ok {
			p.Remaining = n.whole
		}
		if n, ok := xNumber(h, prefix+"Reset-After"); ok {
			p.ResetIn = resetIn(n, at, false)
		} else if n, ok := xNumber(h, prefix+"Reset"); ok {
			p.ResetIn = resetIn(n, at, true)
		}
		if usable(p) {
			return p, true
		}
	}
	return Policy{}, false
}

// integerPolicies reads the members of a draft-03-to-07 policy list
// (RateLimit-Policy: 10;w=1, 50;w=60): an Integer quota with its window w.
// Members of other types are skipped; a missing or malformed w leaves the
// window not stated. The drafts forbid two policies with the same quota and
// call such a field invalid, so then none of its policies is used.
func integerPolicies(l httpsfv.List) []Policy {
	var out []Policy
	for _, m := range l {
		n, ok := itemInt(m)
		if !ok {
			continue
		}
		p := unstated("")
		p.Limit = n
		if w, ok := paramInt(m.(httpsfv.Item).Params, "w", 1); ok {
			p.Window = wholeSeconds(w, MaxWindow)
		}
		for _, o := range out {
			if o.Limit == n {
				return nil
			}
		}
		out = append(out, p)
	}
	return out
}

// withPolicies returns current, the policy the counters describe, followed
// by the policies of a policy list. current takes its Window from the first
// listed policy with the same quota (the drafts identify a policy by its
// quota), and that policy is not repeated.
func withPolicies(current Policy, listed []Policy) []Policy {
	out := []Policy{current}
	joined := current.Limit < 0 || current.Window > 0
	for _, o := range listed {
		if !joined && o.Limit == current.Limit {
			out[0].Window = o.Window
			joined = true
			continue
		}
		out = append(out, o)
	}
	return out
}

// containsPolicy reports whether ps holds a policy equal to p.
func containsPolicy(ps []Policy, p Policy) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// sfList parses the field name as an RFC 9651 List, its lines joined with
// ", " as RFC 9651 says. It returns nil when the field is absent or does not
// parse (RFC 9651: a field that fails to parse is ignored whole).
func sfList(h http.Header, name string) httpsfv.List {
	v := h.Values(name)
	if len(v) == 0 {
		return nil
	}
	l, err := httpsfv.UnmarshalList(v)
	if err != nil {
		return nil
	}
	return l
}

// sfItemInt parses the field name as an RFC 9651 Item holding a
// non-negative Integer; its parameters are ignored.
func sfItemInt(h http.Header, name string) (int64, bool) {
	v := h.Values(name)
	if len(v) == 0 {
		return 0, false
	}
	it, err := httpsfv.UnmarshalItem(v)
	if err != nil {
		return 0, false
	}
	return itemInt(it)
}

// itemInt returns m's value when m is an Item holding a non-negative Integer.
func itemInt(m httpsfv.Member) (int64, bool) {
	it, ok := m.(httpsfv.Item)
	if !ok {
		return 0, false
	}
	n, ok := it.Value.(int64)
	return n, ok && n >= 0
}

// dictInt returns the non-negative Integer d holds at key.
func dictInt(d *httpsfv.Dictionary, key string) (int64, bool) {
	m, ok := d.Get(key)
	if !ok {
		return 0, false
	}
	return itemInt(m)
}

// namedItem is a List member named by a String or Token.
type namedItem struct {
	name   string
	params *httpsfv.Params
}

// namedItems returns the members of l that are Items named by a String or a
// Token, skipping the others (Inner Lists, Integers, and so on).
func namedItems(l httpsfv.List) []namedItem {
	var out []namedItem
	for _, m := range l {
		it, ok := m.(httpsfv.Item)
		if !ok {
			continue
		}
		switch v := it.Value.(type) {
		case string:
			out = append(out, namedItem{v, it.Params})
		case httpsfv.Token:
			out = append(out, namedItem{string(v), it.Params})
		}
	}
	return out
}

// paramInt returns parameter key when it is an Integer of at least low.
func paramInt(p *httpsfv.Params, key string, low int64) (int64, bool) {
	if p == nil {
		return 0, false
	}
	v, ok := p.Get(key)
	if !ok {
		return 0, false
	}
	n, ok := v.(int64)
	return n, ok && n >= low
}

// paramBytes returns parameter key when it is a Byte Sequence, else nil.
func paramBytes(p *httpsfv.Params, key string) []byte {
	if p == nil {
		return nil
	}
	v, _ := p.Get(key)
	b, _ := v.([]byte)
	return b
}

// paramUnit reads the quota unit "qu": absent means Requests; a String (or
// Token) naming a registered unit means that unit; anything else is
// UnknownUnit. "request" is accepted for "requests": the draft's registry
// table spells it so, while its text says "requests".
func paramUnit(p *httpsfv.Params) Unit {
	if p == nil {
		return Requests
	}
	v, ok := p.Get("qu")
	if !ok {
		return Requests
	}
	var s string
	switch v := v.(type) {
	case string:
		s = v
	case httpsfv.Token:
		s = string(v)
	}
	switch s {
	case "requests", "request":
		return Requests
	case "content-bytes":
		return ContentBytes
	case "concurrent-requests":
		return ConcurrentRequests
	}
	return UnknownUnit
}
