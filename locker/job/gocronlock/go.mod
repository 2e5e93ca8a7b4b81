module github.com/locktag/locktag/locker/job/gocronlock

go 1.26.0

require (
	github.com/go-co-op/gocron/v2 v2.2.6
	github.com/locktag/locktag v1.0.0
)

require (
	github.com/gomodule/redigo v1.9.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/jonboulle/clockwork v0.4.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	golang.org/x/exp v0.0.0-20231219180239-dc181d75b848 // indirect
)

// For development in this repository; the workspace (go.work) replaces it.
replace github.com/locktag/locktag => ../../..
