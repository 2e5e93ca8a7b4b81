module github.com/locktag/locktag/locker/locktest

go 1.26.0

replace github.com/locktag/locktag => ../..

require (
	github.com/alicebob/miniredis/v2 v2.40.0
	github.com/gomodule/redigo v1.9.2
	github.com/locktag/locktag v1.0.0
)

require (
	github.com/google/uuid v1.6.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
)
