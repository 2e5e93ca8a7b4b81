package main

// The help texts. Options are written with two dashes; one works too.

const usage = `locktag reads and repairs locktag's locks in Redis, without the service.

Usage:
  locktag [options] <command> [arguments]

Commands:
  ls [pattern]               locks with their holders and waiters, rate keys,
                             idempotency records
  inspect NAME               one lock in full
  release NAME --reason R    force-release a lock: its holder's context is
                             cancelled with the reason, the next waiter gets it
  watch [pattern]            grants, releases and losses as they happen
  check                      what the server allows; the ACL rules to fix it
  version                    the command's version and protocol
  help [command]             this text, or a command's

Options (every command, before or after it):
  --addr host:port[,...]     Redis; with --cluster seed nodes, with
                             --sentinel-master the sentinels
                             (default 127.0.0.1:6379; $LOCKTAG_ADDR)
  --user NAME                ACL user ($LOCKTAG_USER)
  --password PW              password ($LOCKTAG_PASSWORD: keeps it out of ps)
  --db N                     database (one server, Sentinel)
  --cluster                  a Redis Cluster
  --sentinel-master NAME     a Sentinel set-up's master name ($LOCKTAG_SENTINEL_MASTER)
  --sentinel-user NAME       the sentinels' user ($LOCKTAG_SENTINEL_USER)
  --sentinel-password PW     the sentinels' password ($LOCKTAG_SENTINEL_PASSWORD)
  --tls                      connect with TLS
  --cacert FILE              CA certificates (PEM) to verify the server with
  --cert FILE, --key FILE    client certificate and key (PEM)
  --sni NAME                 server name to verify (default: the host)
  --insecure                 do not verify the server's certificate
  --prefix P                 the services' key prefix, locker.WithKeyPrefix
                             (default locktag:; $LOCKTAG_PREFIX)
  --timeout D                bound of each Redis call (default 5s)
  -o text|json               output (default text)

Exit status:
  0    done
  1    not found: nothing held or waited for; --token names no holder
  2    usage: a bad command line, or release without --reason; nothing sent
  3    Redis unavailable: no answer in time, or an error the command cannot
       name
  4    refused: a record of another protocol (named in the message), or
       Redis refused the user (NOPERM, WRONGPASS) or lacks what locktag
       needs (check)
  5    conflict: release --token freed another holder than the one named
       (the lock changed hands between the check and the release)
  130  interrupted (SIGINT, SIGTERM) during a call; watch ends with 0

Examples:
  locktag ls order:
  locktag --addr redis-1:6379,redis-2:6379 --cluster inspect order:42
  locktag release order:42 --reason "holder hung on a dead NFS mount"
  LOCKTAG_PASSWORD=... locktag --tls --cacert ca.pem --addr redis:6380 check

Run 'locktag <command> --help' for a command's details.
`

const lsUsage = `Usage: locktag ls [options] [pattern]

Lists what the services keep under the key prefix, for names matching
pattern: a name prefix (order:), or a glob matched against the whole name
(* any characters, ? one). No pattern: everything.

  locks        one row per holder and per waiter, waiters in queue order
               (waiter 1 gets the lock next). LEFT is a holder's lease left
               or a waiter's wait left; FOR how long it has held or waited.
               A semaphore's kind shows its limit, a read/write lock's
               ROLE the mode. A name used as several kinds shows the first
               of mutex, semaphore, read/write, and names the others.
  rate keys    admissions left now, burst, interval (period/limit), and the
               time until the whole burst is back.
  idempotency  each record (IdempotencyName's hash): in flight or done,
               the first 12 hex digits of its fingerprint (-o json: all
               64), the owner token while in flight, the time until it
               expires, and the callers waiting for it. A record stores no
               time, so its age is not shown.

Each lock, rate key and idempotency record is read by the library's
read-only script, one call per name; listing is SCAN in steps on every
master.

Options:
  --limit N    at most N names (default 1000; 0: no limit)
  and every command's options (locktag --help)

A record of another protocol is listed as refused (exit status 4); the
rest is listed all the same.

Examples:
  locktag ls
  locktag ls 'order:*:pay'
  locktag -o json ls report: | jq '.locks[] | select(.queued > 0) | .name'
`

const inspectUsage = `Usage: locktag inspect [options] NAME

Shows one lock in full: its kind, every holder (owner token, fencing
token, holds, lease left, held for, label, mode) and every waiter in queue
order; and the rate key and the idempotency record of the same name if
there are any (a record with its whole fingerprint). A name of
IdempotencyName's shape (idem: and 43 characters) is not read as a lock:
its :rw key holds the record's waiters.

Exit status 1 when nothing is held, waited for, rate-limited or recorded
under NAME; 4 for a record of another protocol (nothing is read or
changed).

Examples:
  locktag inspect order:42
  locktag -o json inspect order:42 | jq '.lock.holders[0].fence'
  locktag -o json inspect idem:YdcK4gJqUU8Vy9ei207dNOkMSu_rS5m7f2CnIyps4C8 | jq '.record.state'
`

const releaseUsage = `Usage: locktag release [options] NAME --reason TEXT [--token T]

Force-releases the lock NAME as the ops page does (Locker.ForceRelease):
every holder of the name (every kind) is freed, each holder's context is
cancelled with a cause that names the reason (at once through the control
channel, else at its next renewal), and the lock goes to the first waiter
as on a release, with a larger fencing token. Never a DEL.

A write the old holder already sent still lands: without fenced storage,
release only a holder you know is dead or stuck.

Options:
  --reason TEXT  required: why (cut to 200 bytes); the holder's cause and
                 the audit record carry it
  --token T      release only if a holder has this owner token or fencing
                 token (from ls or inspect), else exit 1 and change
                 nothing. Protocol 1 has no conditional force-release: the
                 holder is checked by Inspect just before; if the lock
                 changed hands in between, the holder it freed is named and
                 the exit status is 5
  --actor NAME   who releases, for the audit (default user@host)
  and every command's options (locktag --help)

The audit record (level WARN, "locktag: lock force-released") goes to
stderr; stdout says whom the release freed and who holds the lock now.

Examples:
  locktag release order:42 --reason "worker 7 hung, INC-2291"
  locktag release order:42 --token 1796651328377614 --reason "stuck since 02:58"
`

const watchUsage = `Usage: locktag watch [options] [pattern]

Prints what happens to the locks matching pattern (see ls) until
interrupted (exit status 0), one line an event, with -o json one JSON
object a line:

  from notices the scripts publish (at once):
    grant         a lock handed to a waiter of another process: new owner,
                  fence, lease until it confirms
    forced        a force-release: the owners freed, the reason
    free          a Redlock lock freed with waiters queued
    dropped       a process's queued entries dropped (its grant lapsed)
    record-ended  an idempotency record completed or abandoned, with a
                  caller waiting for it
  from Inspect every --interval (what is never published):
    held          held when watch started
    acquired      a new holder no grant announced: a free lock taken at
                  once, or handed to a waiter of the releasing process
    released      a holder gone while its lease had time left
    expired       a holder gone after its lease ran out: lost (its process
                  stopped renewing), unless it released in the last instant

A lock taken and released between two polls is not seen. Each poll lists
the matching names and inspects each lock: keep the pattern narrow on a
busy Redis. The user needs +psubscribe (locktag check says so).

Options:
  --interval D   how often to inspect the matching locks (default 1s; 0:
                 notices only)
  and every command's options (locktag --help)

Examples:
  locktag watch order:
  locktag -o json watch --interval 500ms | jq -c 'select(.event == "expired")'
`

const checkUsage = `Usage: locktag check [options]

Runs the library's start-up check (Locker.Check) as this user: scripting,
every command the scripts call on the prefix's keys, pub/sub, the server's
version and eviction policy, on every master. Prints its finding and the
ACL rules a service's user needs for the prefix (Locker.ACLRules), and
whether watch may subscribe.

Exit status 0 when the check passes, 4 with what to allow, 3 when Redis
does not answer.

Options:
  --acl-user NAME  the user named in the ACL SETUSER line (default locktag)
  and every command's options (locktag --help)

Examples:
  locktag --user locktag check
  locktag --prefix shop: check --acl-user shop
`

const versionUsage = `Usage: locktag version [-o json]

Prints the command's module version, the Redis protocol it speaks and the
Go release it was built with.
`
