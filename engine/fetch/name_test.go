package fetch

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// assertOneComponent checks the F1/F2 promise for a produced name.
func assertOneComponent(t testing.TB, name string) {
	t.Helper()
	assert.NotEmpty(t, name)
	assert.NotContains(t, name, "/")
	assert.NotContains(t, name, `\`)
	assert.NotContains(t, name, ":")
	assert.NotContains(t, name, "\x00")
	assert.NotEqual(t, ".", name)
	assert.NotEqual(t, "..", name)
	assert.False(t, strings.HasPrefix(name, "."), "hidden or relative name %q", name)
	assert.False(t, strings.HasSuffix(name, ".") || strings.HasSuffix(name, " "), "trailing dot/space in %q", name)
	assert.True(t, utf8.ValidString(name))
	assert.LessOrEqual(t, len(name), maxNameBytes)
}

func TestSafeName_F2_Sanitises(t *testing.T) {
	long := strings.Repeat("a", 300) + ".tar.gz"
	cases := []struct {
		name, in, want string
	}{
		{"plain", "report.pdf", "report.pdf"},
		{"unicode kept", "Überblick – 2024.pdf", "Überblick – 2024.pdf"},
		{"A1 dotdot slash", "../../.bashrc", "bashrc"},
		{"A3 dotdot backslash", `..\..\evil.exe`, "evil.exe"},
		{"A4 absolute unix", "/etc/passwd", "passwd"},
		{"A4 drive backslash", `C:\x.dll`, "x.dll"},
		{"A4 drive relative", "f:foo", "foo"},
		{"A4 stream", "name:stream", "name_stream"},
		{"A4 unc", `\\server\share\x.txt`, "x.txt"},
		{"A5 NUL", "a\x00b.txt", "a_b.txt"},
		{"A5 newline", "a\nb.txt", "a_b.txt"},
		{"A5 DEL and C1", "a\x7fb\u0085c", "a_b_c"},
		{"A5 dot", ".", ""},
		{"A5 dotdot", "..", ""},
		{"A5 trailing dots and spaces", "file.txt. . ", "file.txt"},
		{"A5 leading spaces", "   x", "x"},
		{"A5 CON", "CON", "_CON"},
		{"A5 con lower with ext", "con.txt", "_con.txt"},
		{"A5 NUL double ext", "NUL.tar.gz", "_NUL.tar.gz"},
		{"A5 COM1", "COM1", "_COM1"},
		{"A5 LPT9 ext", "lpt9.log", "_lpt9.log"},
		{"A5 COM superscript", "COM¹.txt", "_COM¹.txt"},
		{"A5 AUX trailing space stem", "AUX .txt", "_AUX .txt"},
		{"not reserved COM10", "COM10.txt", "COM10.txt"},
		{"not reserved CONSOLE", "console.log", "console.log"},
		{"windows forbidden chars", `a<b>c"d|e?f*g`, "a_b_c_d_e_f_g"},
		{"bidi override dropped", "invoice\u202Efdp.exe", "invoicefdp.exe"},
		{"invalid utf8", "a\xffb", "a_b"},
		{"only separators", "///", ""},
		{"trailing slash", "dir/", ""},
		{"tab becomes space", "a\tb", "a_b"},
		{"empty", "", ""},
		{"long keeps its whole extension", long, strings.Repeat("a", maxNameBytes-len(".tar.gz")) + ".tar.gz"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := sanitize(tc.in)
			assert.Equal(t, tc.want, got)
			if got != "" {
				assertOneComponent(t, got)
			}
			safe := SafeName(tc.in)
			assertOneComponent(t, safe)
			if tc.want == "" {
				assert.Equal(t, fallbackName, safe)
			}
		})
	}
}

func TestSafeName_F2_LongMultibyteCutOnRuneBoundary(t *testing.T) {
	got := SafeName(strings.Repeat("ж", 150) + ".txt")
	assert.True(t, utf8.ValidString(got))
	assert.LessOrEqual(t, len(got), maxNameBytes)
	assert.True(t, strings.HasSuffix(got, ".txt"))
}

func TestResponseName_F2_Chain(t *testing.T) {
	user := mustURL(t, "https://example.com/files/report%20final.pdf?x=1")
	cases := []struct {
		name string
		cd   []string
		user *url.URL
		want string
	}{
		{"A1 header with dotdot", []string{`attachment; filename="../../.bashrc"`}, user, "bashrc"},
		{"A2 rfc2231 encoded slashes", []string{`attachment; filename*=UTF-8''..%2F..%2Fx`}, user, "x"},
		{"A2 filename* wins over filename", []string{`attachment; filename="a.txt"; filename*=UTF-8''%C3%A9t%C3%A9.txt`}, user, "été.txt"},
		{"A3 backslashes", []string{`attachment; filename="..\..\evil.exe"`}, user, "evil.exe"},
		{"A6 two filename params", []string{`attachment; filename="a.txt"; filename="b.txt"`}, user, "report final.pdf"},
		{"A6 malformed header", []string{`attachment; filename="unterminated`}, user, "report final.pdf"},
		{"A6 two headers", []string{`attachment; filename="a.txt"`, `attachment; filename="b.txt"`}, user, "report final.pdf"},
		{"header name unusable", []string{`attachment; filename=".."`}, user, "report final.pdf"},
		{"inline with name", []string{`inline; filename="x.png"`}, user, "x.png"},
		{"no header", nil, user, "report final.pdf"},
		{"url encoded slash", nil, mustURL(t, "http://h/a/..%2F..%2Fetc%2Fpasswd"), "passwd"},
		{"url root", nil, mustURL(t, "http://h/"), "index.html"},
		{"url no path", nil, mustURL(t, "http://h"), "index.html"},
		{"url dotdot only", nil, mustURL(t, "http://h/a/%2E%2E"), "index.html"},
		{"no user url", nil, nil, "index.html"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.cd {
				h.Add("Content-Disposition", v)
			}
			got := responseName(h, tc.user)
			assert.Equal(t, tc.want, got)
			assertOneComponent(t, got)
		})
	}
}

func TestCandidates_F3_Numbering(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []string
	}{
		{"simple", "a.txt", []string{"a.txt", "a (1).txt", "a (2).txt"}},
		{"compound tar", "src.tar.gz", []string{"src.tar.gz", "src (1).tar.gz", "src (2).tar.gz"}},
		{"no extension", "README", []string{"README", "README (1)", "README (2)"}},
		{"already numbered continues", "a (1).txt", []string{"a (1).txt", "a (2).txt", "a (3).txt"}},
		{"bare tar", "x.tar", []string{"x.tar", "x (1).tar", "x (2).tar"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			candidatesFrom(tc.in, 0, func(s string, _ int) bool {
				got = append(got, s)
				return len(got) < 3
			})
			assert.Equal(t, tc.want, got)
		})
	}
}

func FuzzSafeName(f *testing.F) {
	for _, s := range []string{"", ".", "..", "../../x", `C:\a\b`, "CON", "a\x00b", "name:stream",
		"  . .", strings.Repeat("é", 200), "\u202e", "x/.", "COM1.", "ab\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := SafeName(s)
		if got == "" || got == "." || got == ".." || strings.ContainsAny(got, "/\\:\x00") ||
			!utf8.ValidString(got) || len(got) > maxNameBytes || isReservedDeviceName(got) {
			t.Fatalf("SafeName(%q) = %q: not one safe component", s, got)
		}
		if again := SafeName(got); again != got {
			t.Fatalf("SafeName not idempotent: %q -> %q -> %q", s, got, again)
		}
	})
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

// G45: names with Unicode format characters, look-alike slashes or a
// leading "-" are cleaned to one safe component, and a shortened name keeps
// its whole extension.
func TestReliability_G45_ConfusableNames(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"zero-width space", "x\u200b.pdf\u200b.exe", "x.pdf.exe"},
		{"zero-width joiner and word joiner", "re\u200dport\u2060.pdf", "report.pdf"},
		{"byte order mark inside", "a\ufeffb.txt", "ab.txt"},
		{"fullwidth and division slashes", "a\uff0fb\u2215c", "a_b_c"},
		{"fraction slash and fullwidth backslash", "a\u2044b\uff3cc.txt", "a_b_c.txt"},
		{"leading dash", "-rf", "_rf"},
		{"leading dash after dots", "..-x.sh", "_x.sh"},
		{"247-byte tar.gz", strings.Repeat("b", 240) + ".tar.gz", strings.Repeat("b", maxNameBytes-len(".tar.gz")) + ".tar.gz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, SafeName(tc.in))
			assert.Equal(t, tc.want, dispositionName([]string{`attachment; filename="` + tc.in + `"`}), "from Content-Disposition")
		})
	}
}

// G45, F2: whatever a server puts in Content-Disposition, a name Heed takes
// from it is one safe component: no separator or look-alike, no invisible
// format character, no leading dot, space or dash, nothing Windows refuses,
// at most maxNameBytes, and cleaning it again changes nothing.
func FuzzDispositionName(f *testing.F) {
	for _, s := range []string{`attachment; filename="a.txt"`, `attachment; filename*=UTF-8''%E2%80%8Bx.pdf`,
		`inline; filename="-rf"`, `attachment; filename="a／b∕c"`, `attachment; filename="..\\..\\x"`,
		"attachment; filename=\"x\u200b.pdf\u200b.exe\"", `attachment; filename*=UTF-8''%EF%BC%8Fetc%EF%BC%8Fpasswd`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		got := dispositionName([]string{header})
		if got == "" {
			return
		}
		if strings.ContainsAny(got, "/\\:\x00") || got == "." || got == ".." || !utf8.ValidString(got) ||
			len(got) > maxNameBytes || isReservedDeviceName(got) || strings.IndexFunc(got, isSlashLike) >= 0 ||
			strings.IndexFunc(got, func(r rune) bool { return unicode.Is(unicode.Cf, r) }) >= 0 ||
			strings.HasPrefix(got, "-") || strings.HasPrefix(got, ".") || strings.HasPrefix(got, " ") {
			t.Fatalf("Content-Disposition %q gave %q: not one safe component", header, got)
		}
		if again := sanitize(got); again != got {
			t.Fatalf("not idempotent: %q -> %q -> %q", header, got, again)
		}
	})
}
