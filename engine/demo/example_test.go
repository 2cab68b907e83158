package demo_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"

	"heed/engine/demo"
)

// Start the default demo, fetch one file from the healthy host and check it
// against Expected, as an integration test of Heed's fetcher would.
func ExampleStart() {
	srv, err := demo.Start(demo.DefaultConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()

	for _, h := range srv.Hosts() {
		fmt.Println(h.Name, h.Behavior)
	}
	u := srv.URLs()[7] // file 7 of the healthy host
	resp, err := http.Get(u)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	h := sha256.New()
	n, _ := io.Copy(h, resp.Body)

	wantSum, wantSize := srv.Expected(u)
	fmt.Println(resp.StatusCode, n == wantSize, hex.EncodeToString(h.Sum(nil)) == wantSum)
	fmt.Println(len(srv.URLs()), "files")
	// Output:
	// healthy healthy
	// throttling throttling
	// flaky flaky
	// slow slow
	// dropping dropping
	// quota quota
	// 200 true true
	// 360 files
}
