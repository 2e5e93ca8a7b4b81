package keyexpr

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseTagRate(t *testing.T) {
	tests := []struct {
		tag  string
		want Rate
		wait time.Duration
	}{
		{`key:"api:{header.X-User}" rate:"100/1m"`, Rate{100, time.Minute, 100}, 0},
		{`key:"api:{header.X-User}" rate:"100/1m" burst:"20"`, Rate{100, time.Minute, 20}, 0},
		{`key:"a" rate:"10/s"`, Rate{10, time.Second, 10}, 0},
		{`key:"a" rate:"1/h" burst:"5"`, Rate{1, time.Hour, 5}, 0},
		{`key:"a" rate:"5/ms"`, Rate{5, time.Millisecond, 5}, 0},
		{`key:"a" rate:"5/100ms" wait:"50ms" name:"n" long:"hash"`, Rate{5, 100 * time.Millisecond, 5}, 50 * time.Millisecond},
		{`key:"a" burst:"3" rate:"2/1m30s"`, Rate{2, 90 * time.Second, 3}, 0},
		{`key:"a" rate:"1000000/1s"`, Rate{1000000, time.Second, 1000000}, 0},
		{`key:"a" rate:"1/8760h"`, Rate{1, MaxRatePeriod, 1}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.tag, func(t *testing.T) {
			s, err := ParseTag(tt.tag)
			if err != nil {
				t.Fatal(err)
			}
			if s.Rate != tt.want || s.Wait != tt.wait || s.Limit != 0 || s.Keys != nil {
				t.Fatalf("got %+v, want rate %+v wait %v", *s, tt.want, tt.wait)
			}
		})
	}
	if iv := (Rate{N: 100, Period: time.Minute}).Interval(); iv != 600*time.Millisecond {
		t.Fatalf("Interval %v, want 600ms", iv)
	}
}

func TestParseTagRateErrors(t *testing.T) {
	tests := []struct {
		tag   string
		field string
		pos   int
		msg   string
	}{
		{`key:"a" rate:"100"`, "rate", 13, `want requests per period`},
		{`key:"a" rate:"0/1m"`, "rate", 13, "from 1 to 1000000000"},
		{`key:"a" rate:"-1/1m"`, "rate", 13, "from 1"},
		{`key:"a" rate:"01/1m"`, "rate", 13, "whole number"},
		{`key:"a" rate:"1000000001/1h"`, "rate", 13, "to 1000000000"},
		{`key:"a" rate:"1/"`, "rate", 13, "want a period"},
		{`key:"a" rate:"1/60"`, "rate", 13, "want a period"},
		{`key:"a" rate:"1/1d"`, "rate", 13, "want a period"},
		{`key:"a" rate:"1/1m/2"`, "rate", 13, "want a period"},
		{`key:"a" rate:"1/500us"`, "rate", 13, "at least 1ms"},
		{`key:"a" rate:"1/-1s"`, "rate", 13, "at least 1ms"},
		{`key:"a" rate:"1/8761h"`, "rate", 13, "at most 8760h"},
		{`key:"a" rate:"2000000/1s"`, "rate", 13, "more than one request per microsecond"},
		{`key:"a" burst:"0" rate:"1/s"`, "burst", 14, `burst "0"`},
		{`key:"a" rate:"1/s" burst:"x"`, "burst", 25, `burst "x"`},
		{`key:"a" burst:"2"`, "burst", 8, "burst without rate"},
		{`key:"a" rate:"1/1h" burst:"9000"`, "burst", 20, "take more than 8760h to refill"},
		{`key:"a" rate:"1/s" expire:"1s"`, "expire", 19, "rate with expire: a rate tag limits how often"},
		{`key:"a" limit:"2" rate:"1/s"`, "rate", 18, "rate with limit"},
		{`key:"a" rate:"1/s" keep:"1s"`, "keep", 19, "rate with keep"},
		{`key:"a" rate:"1/s" mode:"read"`, "mode", 19, "rate with mode"},
		{`keys:"a,b" rate:"1/s"`, "rate", 11, "rate with keys"},
		{`key:"a" rate:"1/s" rate:"2/s"`, "rate", 19, "duplicate field"},
	}
	for _, tt := range tests {
		t.Run(tt.tag, func(t *testing.T) {
			_, err := ParseTag(tt.tag)
			var te *TagError
			if !errors.As(err, &te) || !errors.Is(err, ErrBadValue) && !errors.Is(err, ErrDuplicateField) {
				t.Fatalf("error %v, want a *TagError wrapping ErrBadValue", err)
			}
			if te.Field != tt.field || te.Pos != tt.pos || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("field %q at %d: %v; want field %q at %d with %q", te.Field, te.Pos, err, tt.field, tt.pos, tt.msg)
			}
		})
	}
}

// TestNewSpecRate: rate and burst from fields parse as from a tag, and
// fail at the same field and position.
func TestNewSpecRate(t *testing.T) {
	for _, tt := range []struct {
		f   Fields
		tag string
		ok  bool
	}{
		{Fields{Key: "u:{md.user}", Rate: "10/s", Burst: "2", Wait: "1s"}, `key:"u:{md.user}" wait:"1s" rate:"10/s" burst:"2"`, true},
		{Fields{Key: "a", Rate: "10/s"}, `key:"a" rate:"10/s"`, true},
		{Fields{Key: "a", Burst: "2"}, `key:"a" burst:"2"`, false},
		{Fields{Key: "a", Rate: "10"}, `key:"a" rate:"10"`, false},
		{Fields{Key: "a", Limit: "2", Rate: "1/s"}, `key:"a" limit:"2" rate:"1/s"`, false},
	} {
		got, err := NewSpec(tt.f)
		want, werr := ParseTag(tt.tag)
		if (err == nil) != tt.ok || (werr == nil) != tt.ok {
			t.Fatalf("%s: NewSpec %v, ParseTag %v", tt.tag, err, werr)
		}
		if !tt.ok {
			var a, b *TagError
			if !errors.As(err, &a) || !errors.As(werr, &b) || a.Field != b.Field || a.Pos != b.Pos || a.Tag != b.Tag {
				t.Fatalf("NewSpec error %v, ParseTag error %v: want the same field and position", err, werr)
			}
			continue
		}
		if got.Rate != want.Rate || got.Tag != tt.tag {
			t.Fatalf("%s: NewSpec %+v, ParseTag %+v", tt.tag, got.Rate, want.Rate)
		}
	}
}
