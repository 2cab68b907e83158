package clocale

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSettle(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want string // LANGUAGE after
	}{
		{"C.UTF-8 in LANG", map[string]string{"LANG": "C.UTF-8"}, "en"},
		{"POSIX with a charset in LC_MESSAGES", map[string]string{"LC_MESSAGES": "POSIX.utf8", "LANG": "de_DE.UTF-8"}, "en"},
		{"LC_ALL decides", map[string]string{"LC_ALL": "C.UTF-8", "LANG": "fr_FR.UTF-8"}, "en"},
		{"a language in LC_ALL wins over a C LANG", map[string]string{"LC_ALL": "fr_FR.UTF-8", "LANG": "C.UTF-8"}, ""},
		{"plain C is read as no language already", map[string]string{"LANG": "C"}, ""},
		{"a language", map[string]string{"LANG": "de_DE.UTF-8"}, ""},
		{"nothing set", map[string]string{}, ""},
		{"LANGUAGE kept", map[string]string{"LANG": "C.UTF-8", "LANGUAGE": "de:en"}, "de:en"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{}
			for k, v := range tt.env {
				env[k] = v
			}
			settle(func(k string) string { return env[k] }, func(k, v string) error { env[k] = v; return nil })
			assert.Equal(t, tt.want, env["LANGUAGE"])
			for k, v := range tt.env {
				if k != "LANGUAGE" {
					assert.Equal(t, v, env[k], "%s untouched", k)
				}
			}
		})
	}
}
