package cli

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Help goes to standard output and shows every flag with its default, in
// the words of the README: --rate N (default 60), --burst N (default 4).
func TestHelp_OnStdoutWithDefaults(t *testing.T) {
	code, out, stderr := run(t, "", "get", "--help")
	require.Equal(t, ExitOK, code, stderr)
	assert.Empty(t, stderr)
	for _, want := range []string{
		`--rate N\s+at most N requests a minute to a host\s+\(default 60\)`,
		`--burst N\s+[^-]+\(default 4\)`,
		`--max-inflight N\s+[^-]+\(default 1\)`,
		`--jitter MIN-MAX\s+[^(]+\(default 0-250ms\)`,
		`--backoff-max DURATION\s+[^(]+\(default 1m\)`,
		`--retry-base DURATION\s+[^(]+\(default 2s\)`,
		`--retry STRATEGY\s+[^(]+\(default\s+exponential\)`,
		`--workers N\s+[^(]+\(default 16\)`,
		`-i, --input FILE`,
		`-q, --quiet`,
		`--db FILE\s+[^(]+\(default `,
		`(?m)^Examples:\n  heed get https://`,
	} {
		assert.Regexp(t, want, out)
	}
	assert.NotContains(t, out, "float", "counts are whole numbers")

	code, out, _ = run(t, "", "--help")
	require.Equal(t, ExitOK, code)
	for _, cmd := range []string{"get", "add", "crawl", "crawls", "jobs", "hosts", "host", "history", "demo", "version", "completion", "help"} {
		assert.Regexp(t, `(?m)^  `+cmd+`\s+\S`, out, "heed --help lists %s", cmd)
	}
	// The commands' descriptions start in one column.
	col := -1
	for _, l := range strings.Split(strings.SplitN(strings.SplitN(out, "Commands:\n", 2)[1], "\n\n", 2)[0], "\n") {
		i := strings.Index(strings.TrimLeft(l, " "), " ")
		c := len(l) - len(strings.TrimLeft(l[2+i:], " "))
		if col < 0 {
			col = c
		}
		assert.Equal(t, col, c, "column of %q", l)
	}
}

// commandPaths is every command's path under heed, heed itself first,
// cobra's help and completion commands included.
func commandPaths(t *testing.T) [][]string {
	root := newRoot(Env{Version: "9.9.9"})
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			if !sub.Hidden {
				walk(sub, append(append([]string(nil), path...), sub.Name()))
			}
		}
	}
	walk(root, nil)
	require.Greater(t, len(paths), 10)
	return paths
}

// No help speaks in the SPEC's rule ids ("(G5)", "(L2)"): they mean
// nothing to the people reading it.
func TestHelp_NoRuleIDs(t *testing.T) {
	ruleID := regexp.MustCompile(`\([^)]*\b[GBRLJFNSUWQM][0-9]+\b[^)]*\)`)
	for _, path := range commandPaths(t) {
		code, out, stderr := run(t, "", append(path, "--help")...)
		require.Equal(t, ExitOK, code, "%v: %s", path, stderr)
		require.NotEmpty(t, out, path)
		assert.Empty(t, ruleID.FindAllString(out, -1), "heed %s --help", strings.Join(path, " "))
	}
}

// heed help CMD is heed CMD --help.
func TestHelp_HelpCommandIsTheHelpFlag(t *testing.T) {
	for _, path := range commandPaths(t)[1:] {
		_, flag, _ := run(t, "", append(path, "--help")...)
		code, help, stderr := run(t, "", append([]string{"help"}, path...)...)
		require.Equal(t, ExitOK, code, stderr)
		assert.Equal(t, flag, help, "heed help %s", strings.Join(path, " "))
	}
	_, flag, _ := run(t, "", "--help")
	_, help, _ := run(t, "", "help")
	assert.Equal(t, flag, help)
}

// heed completion prints a script for each shell.
func TestCompletion_PrintsAScript(t *testing.T) {
	for shell, want := range map[string]string{"bash": "bash completion", "zsh": "#compdef heed", "fish": "complete -c heed"} {
		code, out, stderr := run(t, "", "completion", shell)
		require.Equal(t, ExitOK, code, stderr)
		assert.Contains(t, out, want, shell)
		assert.Greater(t, strings.Count(out, "\n"), 20, shell)
	}
}

// GNU flags: --flag=value and --flag value, flags before and after the
// arguments, -i FILE and -q; a single-dash long flag is pointed to its
// two dashes.
func TestFlags_GNUSyntax(t *testing.T) {
	db := filepath.Join(t.TempDir(), "h.db")
	for _, args := range [][]string{
		{"host", "--db", db, "example.com", "--rate=120", "--json"},
		{"host", "--rate", "120", "--db=" + db, "example.com", "--json"},
		{"--db", db, "host", "example.com", "--rate", "120", "--json"},
	} {
		code, out, stderr := run(t, "", args...)
		require.Equal(t, ExitOK, code, "%v: %s", args, stderr)
		assert.Contains(t, out, `"rate_per_min":120`, args)
	}

	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hi")) }))
	t.Cleanup(ts.Close)
	dir := t.TempDir()
	list := filepath.Join(dir, "urls.txt")
	require.NoError(t, os.WriteFile(list, []byte(ts.URL+"/a.txt\n"+ts.URL+"/b.txt\n"), 0o644))
	code, stdout, stderr := run(t, "", "get", "-q", "-i", list, "--db="+filepath.Join(dir, "h.db"), "--dir", filepath.Join(dir, "dl"),
		"--rate=6000", "--jitter=0-0")
	require.Equal(t, ExitOK, code, stderr)
	assert.Empty(t, stdout, "-q")
	assert.Contains(t, stderr, "this run: 2 done")

	code, _, stderr = run(t, "", "get", "--db", db, "-rate", "5", ts.URL+"/a.txt")
	assert.Equal(t, ExitUsage, code)
	assert.Contains(t, stderr, "long flags take two dashes: --rate")
	assert.Contains(t, stderr, "Run 'heed get --help' for usage.")
}

// A bare heed get with nothing queued says so and exits 2, creating no
// database; on a database with queued jobs it downloads them.
func TestGet_BareGetNeedsSomethingToDownload(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "sub", "h.db")
	code, stdout, stderr := run(t, "", "get", "--db", db, "--dir", filepath.Join(dir, "dl"))
	assert.Equal(t, ExitUsage, code)
	assert.Empty(t, stdout)
	assert.Contains(t, stderr, "nothing to download: give URLs, -i FILE, or - for standard input")
	assert.NoDirExists(t, filepath.Join(dir, "sub"))
	assert.NoDirExists(t, filepath.Join(dir, "dl"))

	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hi")) }))
	t.Cleanup(ts.Close)
	db = filepath.Join(dir, "h.db")
	code, _, stderr = run(t, "", "add", "--db", db, ts.URL+"/queued.txt")
	require.Equal(t, ExitOK, code, stderr)
	code, stdout, stderr = run(t, "", "get", "--db", db, "--dir", filepath.Join(dir, "dl"), "--rate", "6000", "--jitter", "0-0")
	require.Equal(t, ExitOK, code, stderr)
	assert.Contains(t, stdout, "done     "+ts.URL+"/queued.txt → queued.txt")
	assert.FileExists(t, filepath.Join(dir, "dl", "queued.txt"))

	code, _, stderr = run(t, "", "get", "--db", db, "--dir", filepath.Join(dir, "dl"))
	assert.Equal(t, ExitUsage, code, "everything is done: nothing to download")
	assert.Contains(t, stderr, "nothing to download")
}

// A done line shows the start of the file's SHA-256; heed jobs --json has
// it whole.
func TestGet_DoneLineShowsAShortSHA(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("hello")) }))
	t.Cleanup(ts.Close)
	dir := t.TempDir()
	code, stdout, stderr := run(t, "", "get", "--db", filepath.Join(dir, "h.db"), "--dir", dir, "--jitter", "0-0", ts.URL+"/h.txt")
	require.Equal(t, ExitOK, code, stderr)
	// sha256("hello")
	assert.Contains(t, stdout, "(5 B, sha256 2cf24dba5fb0)\n")
	code, out, _ := run(t, "", "jobs", "--db", filepath.Join(dir, "h.db"), "--json")
	require.Equal(t, ExitOK, code)
	assert.Contains(t, out, `"sha256":"2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"`)
}

// heed crawl --help shows the crawl's rules with their defaults, get's
// flags and the politeness flags, and its exit codes; heed crawls --help
// its --json.
func TestHelp_CrawlFlagsWithDefaults(t *testing.T) {
	code, out, stderr := run(t, "", "crawl", "--help")
	require.Equal(t, ExitOK, code, stderr)
	assert.Empty(t, stderr)
	for _, want := range []string{
		`(?m)^Usage:\n  heed crawl \[SEED\]\.\.\. \[-i FILE \| -\] \| --resume ID`,
		`--scope SCOPE\s+how far the crawl goes: host [^-]+folder\)\s+\(default host\)`,
		`--depth N\s+[^(]+\(0: the\s+seeds only\)\s+\(default 5\)`,
		`--max-pages N\s+create at most N jobs \(default: no limit\)`,
		`--include RE\s+follow only URLs that match`,
		`--exclude RE\s+never follow URLs that match`,
		`--no-robots\s+do not fetch or obey robots\.txt`,
		`--resume ID\s+go on with crawl ID`,
		`-i, --input FILE`,
		`-q, --quiet`,
		`--workers N\s+[^(]+\(default 16\)`,
		`--user-agent TEXT`,
		`(?m)^Politeness, for every host without settings of its own:$`,
		`--rate N\s+at most N requests a minute to a host\s+\(default 60\)`,
		`Exit status: 0 when every job is done or skipped, 1 when any failed`,
		`(?m)^Examples:\n  heed crawl `,
	} {
		assert.Regexp(t, want, out)
	}
	assert.NotContains(t, out, "(default [])", "a list flag given no value has no default to show")
	assert.NotContains(t, out, "--again", "a seed known already is not fetched again by a crawl")

	code, out, stderr = run(t, "", "crawls", "--help")
	require.Equal(t, ExitOK, code, stderr)
	assert.Regexp(t, `--json\s+one JSON object per line`, out)
	assert.Regexp(t, `(?m)^Examples:\n  heed crawls$`, out)
}
