package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locktag/locktag/locker"
	"github.com/locktag/locktag/locker/goredis"
)

// options are what every command takes: how to reach Redis, the key
// prefix, and the output format.
type options struct {
	addr             string
	user, password   string
	db               int
	cluster          bool
	sentinelMaster   string
	sentinelUser     string
	sentinelPassword string
	tls              bool
	cacert           string
	cert, key        string
	sni              string
	insecure         bool
	prefix           string
	timeout          time.Duration
	output           string
}

// defaultPrefix is the library's default key prefix (locker.WithKeyPrefix).
const defaultPrefix = "locktag:"

// defaultOptions are the options before any flag: the environment's
// values (lookup is os.LookupEnv) where it sets them.
func defaultOptions(lookup func(string) (string, bool)) options {
	env := func(k string) string { v, _ := lookup(k); return v }
	o := options{
		addr:             "127.0.0.1:6379",
		prefix:           defaultPrefix,
		timeout:          5 * time.Second,
		output:           "text",
		user:             env("LOCKTAG_USER"),
		password:         env("LOCKTAG_PASSWORD"),
		sentinelMaster:   env("LOCKTAG_SENTINEL_MASTER"),
		sentinelUser:     env("LOCKTAG_SENTINEL_USER"),
		sentinelPassword: env("LOCKTAG_SENTINEL_PASSWORD"),
	}
	if v := env("LOCKTAG_ADDR"); v != "" {
		o.addr = v
	}
	if v, ok := lookup("LOCKTAG_PREFIX"); ok {
		o.prefix = v
	}
	return o
}

// register adds the options to fs, each defaulting to its current value
// (so that options given before the command carry over to its flag set).
func (o *options) register(fs *flag.FlagSet) {
	fs.StringVar(&o.addr, "addr", o.addr, "")
	fs.StringVar(&o.user, "user", o.user, "")
	fs.StringVar(&o.password, "password", o.password, "")
	fs.IntVar(&o.db, "db", o.db, "")
	fs.BoolVar(&o.cluster, "cluster", o.cluster, "")
	fs.StringVar(&o.sentinelMaster, "sentinel-master", o.sentinelMaster, "")
	fs.StringVar(&o.sentinelUser, "sentinel-user", o.sentinelUser, "")
	fs.StringVar(&o.sentinelPassword, "sentinel-password", o.sentinelPassword, "")
	fs.BoolVar(&o.tls, "tls", o.tls, "")
	fs.StringVar(&o.cacert, "cacert", o.cacert, "")
	fs.StringVar(&o.cert, "cert", o.cert, "")
	fs.StringVar(&o.key, "key", o.key, "")
	fs.StringVar(&o.sni, "sni", o.sni, "")
	fs.BoolVar(&o.insecure, "insecure", o.insecure, "")
	fs.StringVar(&o.prefix, "prefix", o.prefix, "")
	fs.DurationVar(&o.timeout, "timeout", o.timeout, "")
	fs.StringVar(&o.output, "o", o.output, "")
}

// check reports a usage error in o, or nil.
func (o *options) check() error {
	switch {
	case o.output != "text" && o.output != "json":
		return fmt.Errorf("-o %q: want text or json", o.output)
	case o.cluster && o.sentinelMaster != "":
		return errors.New("--cluster and --sentinel-master exclude each other")
	case o.cluster && o.db != 0:
		return errors.New("--db: a Cluster has database 0 only")
	case o.timeout <= 0:
		return fmt.Errorf("--timeout %v: want a positive duration", o.timeout)
	case len(o.addrs()) == 0:
		return errors.New("--addr: no address")
	case len(o.addrs()) > 1 && !o.cluster && o.sentinelMaster == "":
		return fmt.Errorf("--addr %s names several servers: add --cluster (seed nodes) or --sentinel-master (sentinels)", o.addr)
	case (o.cert == "") != (o.key == ""):
		return errors.New("--cert and --key go together")
	case !o.tls && (o.cacert != "" || o.cert != "" || o.insecure || o.sni != ""):
		return errors.New("--cacert, --cert, --key, --sni and --insecure need --tls")
	}
	return nil
}

// addrs are the addresses --addr names.
func (o *options) addrs() []string {
	var out []string
	for a := range strings.SplitSeq(o.addr, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// tlsConfig is the TLS configuration --tls and its options make; nil
// without --tls.
func (o *options) tlsConfig() (*tls.Config, error) {
	if !o.tls {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: o.sni, InsecureSkipVerify: o.insecure}
	if o.cacert != "" {
		pem, err := os.ReadFile(o.cacert)
		if err != nil {
			return nil, fmt.Errorf("--cacert: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--cacert %s: no PEM certificate in it", o.cacert)
		}
	}
	if o.cert != "" {
		pair, err := tls.LoadX509KeyPair(o.cert, o.key)
		if err != nil {
			return nil, fmt.Errorf("--cert, --key: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// client returns the go-redis client o describes: a Cluster client with
// --cluster, a failover client with --sentinel-master, else one server's.
// Every client gives each failure to the locker at once (MaxRetries -1):
// a retried script could otherwise run twice, and a force-release run
// twice frees the holder the first one handed the lock to.
func (o *options) client() (redis.UniversalClient, error) {
	tc, err := o.tlsConfig()
	if err != nil {
		return nil, err
	}
	switch {
	case o.cluster:
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: o.addrs(), Username: o.user, Password: o.password, TLSConfig: tc,
			DialTimeout: o.timeout, ReadTimeout: o.timeout, WriteTimeout: o.timeout,
			ContextTimeoutEnabled: true, MaxRetries: -1, PoolSize: 4,
		}), nil
	case o.sentinelMaster != "":
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: o.sentinelMaster, SentinelAddrs: o.addrs(),
			SentinelUsername: o.sentinelUser, SentinelPassword: o.sentinelPassword,
			Username: o.user, Password: o.password, DB: o.db, TLSConfig: tc,
			DialTimeout: o.timeout, ReadTimeout: o.timeout, WriteTimeout: o.timeout,
			ContextTimeoutEnabled: true, MaxRetries: -1, PoolSize: 4,
		}), nil
	}
	return redis.NewClient(&redis.Options{
		Addr: o.addrs()[0], Username: o.user, Password: o.password, DB: o.db, TLSConfig: tc,
		DialTimeout: o.timeout, ReadTimeout: o.timeout, WriteTimeout: o.timeout,
		ContextTimeoutEnabled: true, MaxRetries: -1, PoolSize: 4,
	}), nil
}

// where names the deployment o reaches, for messages.
func (o *options) where() string {
	switch {
	case o.cluster:
		return "the Cluster at " + o.addr
	case o.sentinelMaster != "":
		return "the master " + strconv.Quote(o.sentinelMaster) + " of the sentinels at " + o.addr
	}
	return "Redis at " + o.addr
}

// session is a connected command: the client and the Locker on it.
type session struct {
	rdb redis.UniversalClient
	lk  *locker.Locker
	// forced gets the owner tokens each ForceRelease freed (the Locker's
	// Observer).
	forced *forceObserver
}

// open connects as o says. New does no I/O: the first call does. The
// Locker logs (the force-release audit, a record of another protocol met)
// to logs.
func (o *options) open(logs io.Writer) (*session, error) {
	rdb, err := o.client()
	if err != nil {
		return nil, err
	}
	obs := &forceObserver{}
	lk, err := locker.New(goredis.New(rdb),
		locker.WithKeyPrefix(o.prefix),
		locker.WithCallTimeout(o.timeout),
		locker.WithObserver(obs),
		locker.WithLogger(slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	)
	if err != nil {
		_ = rdb.Close()
		return nil, err
	}
	return &session{rdb: rdb, lk: lk, forced: obs}, nil
}

// Close closes the Locker, then the client (the driver does not close a
// client it was given).
func (s *session) Close() error {
	return errors.Join(s.lk.Close(), s.rdb.Close())
}
