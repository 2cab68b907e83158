// Package e2e holds Heed's end-to-end tests: they build the real heed
// binary once (TestMain) and run `heed get`, `heed jobs` and `heed
// history` as a person would, against loopback servers started in the
// test (the demo hosts of engine/demo, or small file servers with Range
// support), including kill -9 and SIGINT in the middle of downloads.
//
// The package has no code of its own; `go test ./e2e` runs it.
package e2e
