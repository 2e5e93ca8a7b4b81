module github.com/locktag/locktag

go 1.26.0

require (
	github.com/gomodule/redigo v1.9.2
	github.com/google/uuid v1.6.0
)
