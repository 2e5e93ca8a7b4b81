// Package compat holds tests of locktag's adapters with third-party
// routers (chi): how a lock tag reads their path parameters and route
// patterns, and how a tag mistake on one of their routes is found at
// start-up or answered at request time. The library itself imports none
// of them; the package has no code of its own.
package compat
