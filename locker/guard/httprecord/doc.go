// Package httprecord is the idempotency record format of locktag's HTTP
// adapters (middleware/stdhttp and the Gin middleware): how they describe
// a request to the idempotency guard, and how they encode the response
// they store ("H1"), so that a record one of them wrote replays through
// the other. Tools that write such records themselves — the test kit
// locker/locktest storing the record of a first request — use it to write
// exactly what the adapters replay:
//
//	q := httprecord.Request(r, "/payments", "Idempotency-Key", nil)
//	name, fp, err := q.Identity(scope, body)
//	...
//	claim, err := lk.Idempotent(ctx, name, fp, locker.IdempotencyParams{})
//	...
//	payload := httprecord.EncodeResponse(header, []string{"Content-Type"}, respBody)
//	err = claim.Complete(ctx, guard.EncodeRecord(httprecord.Format, guard.Answer{Status: 201, Payload: payload}))
package httprecord
