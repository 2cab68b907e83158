module heed/bench

go 1.26.0

require (
	github.com/mattn/go-sqlite3 v1.14.53
	github.com/stretchr/testify v1.12.1
	golang.org/x/sys v0.50.0
	heed v0.0.0
)

require (
	github.com/dunglas/httpsfv v1.1.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)

replace heed => ../
