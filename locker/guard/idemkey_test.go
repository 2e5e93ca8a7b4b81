package guard

import (
	"errors"
	"strings"
	"testing"
)

func TestParseIdempotencyKey(t *testing.T) {
	long := strings.Repeat("k", 255)
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"8e03978e-40d5-43e8-bc93-6894a57f9324", "8e03978e-40d5-43e8-bc93-6894a57f9324", true},
		{`"8e03978e-40d5"`, "8e03978e-40d5", true},
		{`"with space and \"quote\" and \\"`, `with space and "quote" and \`, true},
		{long, long, true},
		{`"` + long + `"`, long, true},
		{long + "k", "", false},
		{"", "", false},
		{`""`, "", false},
		{`"`, "", false},
		{`"open`, "", false},
		{`"a"b"`, "", false},
		{`"bad \n escape"`, "", false},
		{`"trailing\"`, "", false},
		{"two words", "", false},
		{"caf\xc3\xa9", "", false},
		{"tab\there", "", false},
		{`back\slash`, "", false},
		{`"ctl` + "\x01" + `"`, "", false},
	} {
		got, err := ParseIdempotencyKey(tc.in, 0)
		if tc.ok && (err != nil || got != tc.want) {
			t.Errorf("ParseIdempotencyKey(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		if !tc.ok && !errors.Is(err, ErrBadIdempotencyKey) {
			t.Errorf("ParseIdempotencyKey(%q) = %q, %v; want ErrBadIdempotencyKey", tc.in, got, err)
		}
		if err != nil && strings.Contains(err.Error(), tc.in) && tc.in != "" && tc.in != `"` {
			t.Errorf("error %q repeats the key", err)
		}
	}
	if _, err := ParseIdempotencyKey("abcd", 3); !errors.Is(err, ErrBadIdempotencyKey) {
		t.Errorf("cap 3: %v", err)
	}
}
