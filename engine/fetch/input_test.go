package fetch

import (
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseURLList_J1_B16(t *testing.T) {
	cases := []struct {
		name        string
		text        string
		want        []string
		rejectLines []int
		reasonHas   []string
	}{
		{"one", "https://a.example/x", []string{"https://a.example/x"}, nil, nil},
		{"lines and spaces", "http://a/1 http://a/2\n\n\thttps://b/3  \n", []string{"http://a/1", "http://a/2", "https://b/3"}, nil, nil},
		{"crlf line endings", "http://a/1\r\nhttp://a/2\r\n", []string{"http://a/1", "http://a/2"}, nil, nil},
		{"B16 CR inside", "http://a/1\rX-Injected:1\nhttp://a/2", []string{"http://a/2"}, []int{1}, []string{"carriage return"}},
		{"B16 control char", "http://a/\x01x\nhttp://a/\x7f", nil, []int{1, 2}, []string{"control character", "control character"}},
		{"ftp refused", "ftp://a/x", nil, []int{1}, []string{"only http and https"}},
		{"file refused", "file:///etc/passwd", nil, []int{1}, []string{"only http and https"}},
		{"javascript refused", "javascript:alert(1)", nil, []int{1}, []string{"only http and https"}},
		{"relative refused", "example.com/x", nil, []int{1}, []string{"not an absolute URL"}},
		{"no host", "http:///x", nil, []int{1}, []string{"no host"}},
		{"bad escape", "http://a/%zz", nil, []int{1}, []string{"not a URL"}},
		{"upper scheme and host", "HTTPS://A.example/x", []string{"https://a.example/x"}, nil, nil},
		{"J2 one spelling of one URL", "HTTP://Example.COM:80/A?Q=1#top https://Bücher.DE:443/x http://h:/p https://h:443x/",
			[]string{"http://example.com/A?Q=1", "https://xn--bcher-kva.de/x", "http://h/p"}, []int{1}, []string{"port"}},
		{"J2 ports, IP literals, empty paths", "http://h:443/ https://h:80/ http://[::1]:80/v6 http://[0:0::1]:8080/v6 http://h:038001 http://127.0.0.1:38001?q",
			[]string{"http://h:443/", "https://h:80/", "http://[::1]/v6", "http://[::1]:8080/v6", "http://h:38001/", "http://127.0.0.1:38001/?q"}, nil, nil},
		{"J2 one name in two scripts", "http://bücher.test/a http://xn--bcher-kva.test/a http://bu%CC%88cher.test/a",
			[]string{"http://xn--bcher-kva.test/a", "http://xn--bcher-kva.test/a", "http://xn--bcher-kva.test/a"}, nil, nil},
		{"J1 byte order mark", "\ufeffhttp://a/1\nhttp://a/2", []string{"http://a/1", "http://a/2"}, nil, nil},
		{"J1 bad host", "http://127.0.0.1:99999/x\nhttps://xn--/y", nil, []int{1, 2}, []string{"port", "invalid host name"}},
		{"line numbers", "http://a/1\n\nftp://x\nhttp://a/2", []string{"http://a/1", "http://a/2"}, []int{3}, []string{"http"}},
		{"comment lines", "# my list\nhttp://a/1\n  \t# http://a/skipped\nhttp://a/2 #x\n#", []string{"http://a/1", "http://a/2"},
			[]int{4}, []string{"not an absolute URL"}}, // only a whole line is a comment
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			urls, rejects := ParseURLList(tc.text)
			var got []string
			for _, p := range urls {
				got = append(got, p.URL.String())
			}
			assert.Equal(t, tc.want, got)
			require.Len(t, rejects, len(tc.rejectLines))
			for i, r := range rejects {
				assert.Equal(t, tc.rejectLines[i], r.Line)
				assert.Contains(t, r.Reason, tc.reasonHas[i])
				assert.NotEmpty(t, r.Text)
			}
		})
	}
}

func TestOneURL_J1_AnArgumentIsOneURL(t *testing.T) {
	for _, tt := range []struct{ arg, want string }{
		{"http://h/a", "http://h/a"},
		{"  http://h/a\t", "http://h/a"},
		{"http://h/my report.pdf", "http://h/my%20report.pdf"},
		{"http://h/a\tb c\u00a0d", "http://h/a%09b%20c%C2%A0d"},
		{"http://h/a\nhttp://h/b", "http://h/a\nhttp://h/b"}, // line breaks stay, for ParseURLList to see
	} {
		assert.Equal(t, tt.want, OneURL(tt.arg), "%q", tt.arg)
	}
	urls, rejects := ParseURLList(OneURL("http://h/my report.pdf"))
	require.Empty(t, rejects)
	require.Len(t, urls, 1)
	assert.Equal(t, "/my report.pdf", urls[0].URL.Path)
}

// J1: a rejected token is repeated up to 200 bytes, never cut inside a character, so that a
// pasted file without line breaks is not echoed whole.
func TestParseURLList_J1_LongRejectShortened(t *testing.T) {
	long := "ftp://x/" + strings.Repeat("é", 5_000_000)
	_, rejects := ParseURLList("http://a/1\n" + long)
	require.Len(t, rejects, 1)
	r := rejects[0]
	assert.Equal(t, 2, r.Line)
	assert.LessOrEqual(t, len(r.Text), maxRejectText+len("…"))
	assert.True(t, strings.HasPrefix(r.Text, "ftp://x/éé"))
	assert.True(t, strings.HasSuffix(r.Text, "é…"), "cut between characters")
	assert.True(t, utf8.ValidString(r.Text))
	assert.Equal(t, "http://a/1", excerpt("http://a/1"), "short ones whole")
}

func TestParseURLList_J1_HundredThousandLines(t *testing.T) {
	text := pasteOf(100_000)
	urls, rejects := ParseURLList(text)
	assert.Len(t, urls, 100_000)
	assert.Empty(t, rejects)
	assert.Equal(t, "https://host9.example/file/99999.bin", urls[99_999].URL.String())
	assert.Equal(t, 100_000, urls[99_999].Line)
}

func pasteOf(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "https://host%d.example/file/%d.bin\r\n", i%10, i)
	}
	return b.String()
}

func BenchmarkParseURLList(b *testing.B) {
	text := pasteOf(100_000)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	for b.Loop() {
		urls, _ := ParseURLList(text)
		if len(urls) != 100_000 {
			b.Fatal(len(urls))
		}
	}
}

// J1: a list read in parts (ListReader.Next) gives what reading it whole
// gives, line numbers included, whatever the parts' sizes.
func TestListReader_J1_PartsAsWhole(t *testing.T) {
	texts := []string{
		"",
		"http://a.example/1",
		"http://a.example/1\n",
		"\ufeffhttp://a.example/bom\nhttp://a.example/2\n",
		"# a comment\r\nhttp://a.example/1 http://a.example/2\r\n\r\nftp://x/y\nhttp://a.example/3",
		"http://a.example/1\n\n\nnot a url\n  # indented comment\nhttp://b.example/\ufeffx\n",
	}
	for _, text := range texts {
		urls, rejects := ParseURLList(text)
		for n := 1; n <= 4; n++ {
			l := NewListReader(strings.NewReader(text))
			var u []Parsed
			var r []Reject
			for {
				pu, pr, err := l.Next(n)
				u, r = append(u, pu...), append(r, pr...)
				if err != nil {
					require.ErrorIs(t, err, io.EOF)
					break
				}
			}
			assert.Equal(t, lineOf(urls), lineOf(u), "%q in parts of %d", text, n)
			assert.Equal(t, rejects, r, "%q in parts of %d", text, n)
		}
	}
}

// G43: a line over MaxLineBytes is rejected with its number and the list
// goes on after it; an input with no line break for 16 MiB (/dev/zero, a
// binary file) is no list, and reading it stops; a URL over MaxURLBytes is
// refused. Memory stays bounded: the reader holds a line at a time.
func TestReliability_G43_InputWithoutLimits(t *testing.T) {
	long := "http://a.example/" + strings.Repeat("x", MaxLineBytes)
	text := "http://a.example/1\n" + long + "\nhttp://a.example/" + strings.Repeat("y", MaxURLBytes) + "\nhttp://a.example/2\n"
	urls, rejects := ParseURLList(text)
	assert.Equal(t, []string{"1 http://a.example/1", "4 http://a.example/2"}, lineOf(urls))
	require.Len(t, rejects, 2)
	assert.Equal(t, 2, rejects[0].Line)
	assert.Contains(t, rejects[0].Reason, "longer than 64 KiB")
	assert.LessOrEqual(t, len(rejects[0].Text), maxRejectText+len("…"))
	assert.Equal(t, 3, rejects[1].Line)
	assert.Contains(t, rejects[1].Reason, "over the limit")

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	l := NewListReader(io.LimitReader(zeros{}, 64<<20))
	_, rs, err := l.Next(100)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, ErrNotAList)
	assert.ErrorContains(t, err, "line 1")
	require.Len(t, rs, 1)
	assert.Equal(t, 1, rs[0].Line)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20), "the endless line is never held")
}

// zeros is /dev/zero.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// lineOf is each parsed URL with its line, for comparing.
func lineOf(ps []Parsed) []string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%d %s", p.Line, p.URL))
	}
	return out
}
