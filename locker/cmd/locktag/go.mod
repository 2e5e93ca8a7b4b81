module github.com/locktag/locktag/locker/cmd/locktag

go 1.26.0

require (
	github.com/gomodule/redigo v1.9.2
	github.com/locktag/locktag v1.0.0
	github.com/locktag/locktag/locker/goredis v1.0.0
	github.com/redis/go-redis/v9 v9.9.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dgryski/go-rendezvous v0.0.0-20200823014737-9f7001d12a5f // indirect
	github.com/google/uuid v1.6.0 // indirect
)

replace (
	github.com/locktag/locktag => ../../..
	github.com/locktag/locktag/locker/goredis => ../../goredis
)
