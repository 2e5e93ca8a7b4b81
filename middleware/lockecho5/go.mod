module github.com/locktag/locktag/middleware/lockecho5

go 1.26.0

require (
	github.com/gomodule/redigo v1.9.2
	github.com/labstack/echo/v5 v5.4.4
	github.com/locktag/locktag v1.0.0
)

require (
	github.com/google/uuid v1.6.0 // indirect
	golang.org/x/time v0.15.0 // indirect
)

replace github.com/locktag/locktag => ../..
