// Package clocale keeps a C locale from reading as a language. Imported
// for its side effect by main, it runs before the window toolkit's own
// start-up: a locale like C.UTF-8 (the default of many servers and
// containers) names no language, but the toolkit's locale lookup reads
// "C" as one and prints an error at every start, even for `heed get`.
//
// It only sets LANGUAGE to "en", and only when LANGUAGE is unset and the
// locale that decides messages (LC_ALL, else LC_MESSAGES, else LANG) is C
// or POSIX with a character set. C programs Heed starts ignore LANGUAGE
// under a C locale, so nothing changes for them.
//
// It imports nothing but os and strings, so Go's initialisation order
// (packages ready to start, in order of import path) runs it before any
// package that needs text/template or log, as the toolkit's does.
package clocale

import (
	"os"
	"strings"
)

func init() { settle(os.Getenv, os.Setenv) }

// settle sets LANGUAGE to "en" through setenv when getenv tells a C or
// POSIX locale with a character set decides messages and LANGUAGE is unset.
func settle(getenv func(string) string, setenv func(string, string) error) {
	if getenv("LANGUAGE") != "" {
		return
	}
	for _, k := range [...]string{"LC_ALL", "LC_MESSAGES", "LANG"} {
		v := getenv(k)
		if v == "" {
			continue
		}
		if strings.HasPrefix(v, "C.") || strings.HasPrefix(v, "POSIX.") {
			_ = setenv("LANGUAGE", "en")
		}
		return
	}
}
