package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/redis/go-redis/v9"
)

func main() {
	// go-redis logs its client's doings (a sentinel's answer, a
	// reconnect) to stderr: the command says what matters itself.
	redis.SetLogger(quiet{})
	// An interrupt ends watch (status 0) and cuts short a call in flight.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.LookupEnv)
	stop()
	os.Exit(code)
}

// quiet is a go-redis logger that drops every line.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
