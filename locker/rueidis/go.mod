module github.com/locktag/locktag/locker/rueidis

go 1.26.0

replace github.com/locktag/locktag => ../..

require (
	github.com/gomodule/redigo v1.9.2
	github.com/locktag/locktag v1.0.0
	github.com/redis/rueidis v1.0.79
)

require (
	github.com/google/uuid v1.6.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)
