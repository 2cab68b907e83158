package ui

import (
	"testing"

	"fyne.io/fyne/v2/test"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNew_TitleAndStatus(t *testing.T) {
	a := test.NewTempApp(t)
	w := New(a, nil, Options{Version: "0.1.0", DBPath: "/tmp/heed.db", Dir: "/tmp/dl"})
	require.NotNil(t, w.Window())
	assert.Equal(t, "Heed", w.Window().Title())
	assert.Contains(t, w.status.Text, "0.1.0")
	assert.Contains(t, w.status.Text, "/tmp/heed.db")
	assert.Contains(t, w.status.Text, "/tmp/dl")
}
