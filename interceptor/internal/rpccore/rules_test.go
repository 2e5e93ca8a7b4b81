package rpccore

import (
	"errors"
	"testing"
	"time"

	"github.com/locktag/locktag/interceptor/locktagv1"
	"github.com/locktag/locktag/keyexpr"
)

// TestRuleSpecKeys: the option's keys field makes a multi-key spec, with
// the tag's checks.
func TestRuleSpecKeys(t *testing.T) {
	rs := ruleSpec(&locktagv1.LockRule{Keys: "acct:{req.from},acct:{req.to}", Wait: "1s"}, "test")
	if rs.err != nil || len(rs.spec.Keys) != 2 || rs.tag != `keys:"acct:{req.from},acct:{req.to}" wait:"1s"` {
		t.Fatalf("ruleSpec = %+v, %v", rs.spec, rs.err)
	}
	rs = ruleSpec(&locktagv1.LockRule{Keys: "acct:{req.from},", Wait: "1s"}, "test")
	var te *keyexpr.TagError
	if !errors.As(rs.err, &te) || te.Field != "keys" || te.Pos != 22 || !errors.Is(rs.err, keyexpr.ErrMissingKey) {
		t.Fatalf("empty template: %v", rs.err)
	}
	rs = ruleSpec(&locktagv1.LockRule{Key: "a", Keys: "b,c"}, "test")
	if !errors.Is(rs.err, keyexpr.ErrBadValue) {
		t.Fatalf("key and keys: %v", rs.err)
	}
}

// TestRuleSpecRate: the option's rate and burst fields make a rate spec,
// with the tag's checks.
func TestRuleSpecRate(t *testing.T) {
	rs := ruleSpec(&locktagv1.LockRule{Key: "u:{md.x-user}", Rate: "10/s", Burst: "2"}, "test")
	if rs.err != nil || rs.spec.Rate != (keyexpr.Rate{N: 10, Period: time.Second, Burst: 2}) || rs.tag != `key:"u:{md.x-user}" rate:"10/s" burst:"2"` {
		t.Fatalf("ruleSpec = %+v, %q, %v", rs.spec, rs.tag, rs.err)
	}
	rs = ruleSpec(&locktagv1.LockRule{Key: "u:{md.x-user}", Rate: "10/s", Limit: "2"}, "test")
	if !errors.Is(rs.err, keyexpr.ErrBadValue) {
		t.Fatalf("rate and limit: %v", rs.err)
	}
}
