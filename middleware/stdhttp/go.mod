module github.com/locktag/locktag/middleware/stdhttp

go 1.26.0

require github.com/locktag/locktag v1.0.0

require (
	github.com/gomodule/redigo v1.9.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
)

replace github.com/locktag/locktag => ../..
