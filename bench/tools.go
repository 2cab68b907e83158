package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Job is one timed run of one tool: the same URLs, the same concurrency and
// a fresh empty folder for every tool.
type Job struct {
	URLs    []string
	URLFile string // the URLs, one a line
	Dir     string // fresh, empty download folder
	Scratch string // fresh folder for the tool's own files (database, config)
	Workers int    // requests in flight at once
}

// Tool is a downloader under test. Args returns its command line for j; it
// may write what the tool needs (a curl config, …) into j.Scratch.
type Tool struct {
	Name        string
	Bin         string   // path or name looked up in PATH
	VersionArgs []string // prints the version on the first line
	Args        func(j Job) ([]string, error)
	// Display is the command line shown in the report, with URLFILE, DIR,
	// DB and N standing for the run's values.
	Display string
}

// Heed runs `heed get` with politeness off: no per-host rate limit worth
// the name, no jitter, and as many requests in flight per host as overall.
func Heed(bin string) Tool {
	return Tool{
		Name: "heed", Bin: bin, VersionArgs: []string{"version"},
		Display: "heed get -q --rate 600000 --burst 10000 --max-inflight N --jitter 0-0 --workers N -i URLFILE --db DB --dir DIR",
		Args: func(j Job) ([]string, error) {
			n := strconv.Itoa(j.Workers)
			return []string{"get", "-q", "--rate", "600000", "--burst", "10000", "--max-inflight", n, "--jitter", "0-0",
				"--workers", n, "-i", j.URLFile, "--db", filepath.Join(j.Scratch, "heed.db"), "--dir", j.Dir}, nil
		},
	}
}

// HeedOld is Heed as an older tree builds it (make bench's BENCH_OLD), run
// exactly as Heed is: the same figures for the design before this one.
func HeedOld(bin string) Tool {
	t := Heed(bin)
	t.Name = "heed-old"
	return t
}

// Curl runs curl --parallel over a config file of url/output pairs (the
// command line cannot hold 20,000 URLs).
func Curl() Tool {
	return Tool{
		Name: "curl", Bin: "curl", VersionArgs: []string{"--version"},
		Display: "curl --parallel --parallel-max N -K CONFIG --output-dir DIR --fail -s -S   (CONFIG: url = \"…\" / output = \"NAME\" per URL)",
		Args: func(j Job) ([]string, error) {
			cfg := filepath.Join(j.Scratch, "curl.cfg")
			var b strings.Builder
			for _, u := range j.URLs {
				name, err := FileName(u)
				if err != nil {
					return nil, err
				}
				fmt.Fprintf(&b, "url = %q\noutput = %q\n", u, name)
			}
			if err := os.WriteFile(cfg, []byte(b.String()), 0o644); err != nil {
				return nil, err
			}
			return []string{"--parallel", "--parallel-max", strconv.Itoa(j.Workers), "-K", cfg,
				"--output-dir", j.Dir, "--fail", "-s", "-S"}, nil
		},
	}
}

// Wget2 runs wget2 with as many threads as the others have requests.
func Wget2() Tool {
	return Tool{
		Name: "wget2", Bin: "wget2", VersionArgs: []string{"--version"},
		Display: "wget2 --max-threads=N -i URLFILE -P DIR -q --no-robots",
		Args: func(j Job) ([]string, error) {
			return []string{"--max-threads=" + strconv.Itoa(j.Workers), "-i", j.URLFile, "-P", j.Dir, "-q", "--no-robots"}, nil
		},
	}
}

// Aria2 runs aria2c with N downloads at once and one connection per file
// (--split=1), so that every tool has N connections; files are written as
// they arrive (--file-allocation=none) and never renamed.
func Aria2() Tool {
	return Tool{
		Name: "aria2c", Bin: "aria2c", VersionArgs: []string{"--version"},
		Display: "aria2c --no-conf -i URLFILE -d DIR -j N --max-connection-per-server=16 --split=1 --allow-overwrite=true --auto-file-renaming=false --file-allocation=none -q",
		Args: func(j Job) ([]string, error) {
			return []string{"--no-conf", "-i", j.URLFile, "-d", j.Dir, "-j", strconv.Itoa(j.Workers),
				"--max-connection-per-server=16", "--split=1", "--allow-overwrite=true", "--auto-file-renaming=false",
				"--file-allocation=none", "-q"}, nil
		},
	}
}

// Plain runs the PlainGet floor as a child process: self is a binary that
// runs PlainGet when called as `self plain -i URLFILE -P DIR -j N`.
func Plain(self string) Tool {
	return plainTool(self, "plain-go",
		"PlainGet: N goroutines, one net/http client, each body to DIR/NAME (bench/plain.go)")
}

// PlainSHA256 runs PlainGetSHA256 as a child process (`self plain -sha256 …`):
// the plain client that also hashes every file, as Heed must (F7). It is a
// reference, not a peer: no other tool hashes what it downloads.
func PlainSHA256(self string) Tool {
	return plainTool(self, "plain-go+sha256",
		"PlainGetSHA256: PlainGet that also takes each body's SHA-256 as it is written (bench/plain.go)", "-sha256")
}

// PlainDefault runs PlainGetDefault as a child process (`self plain -default
// …`): the plain client on http.DefaultClient, as a first version of it is
// written. A reference, not a peer.
func PlainDefault(self string) Tool {
	return plainTool(self, "plain-go/default",
		"PlainGetDefault: PlainGet on http.DefaultClient, which keeps 2 idle connections a host (bench/plain.go)", "-default")
}

// plainTool is `self plain FLAGS… -i URLFILE -P DIR -j N`.
func plainTool(self, name, display string, flags ...string) Tool {
	return Tool{
		Name: name, Bin: self, Display: display,
		Args: func(j Job) ([]string, error) {
			args := append([]string{"plain"}, flags...)
			return append(args, "-i", j.URLFile, "-P", j.Dir, "-j", strconv.Itoa(j.Workers)), nil
		},
	}
}
