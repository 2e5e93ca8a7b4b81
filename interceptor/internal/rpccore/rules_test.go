package rpccore

import (
	"errors"
	"testing"

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
