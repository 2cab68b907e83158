module heed

go 1.26.0

require (
	fyne.io/fyne/v2 v2.7.1 // indirect
	github.com/mattn/go-sqlite3 v1.14.53 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	golang.org/x/term v0.48.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)
