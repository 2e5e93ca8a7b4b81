package keyexpr

import (
	"errors"
	"reflect"
	"testing"
)

// TestNewSpec: a Spec built from fields equals the one its tag parses to,
// and a bad field fails as ParseTag fails, at the same position.
func TestNewSpec(t *testing.T) {
	tests := []struct {
		f    Fields
		tag  string
		want error // nil: valid
	}{
		{Fields{Key: "order:{path.id}"}, `key:"order:{path.id}"`, nil},
		{Fields{Key: "sku:{req.sku}", Expire: "10s", Wait: "1s", Name: "reserve", Long: "hash"},
			`key:"sku:{req.sku}" expire:"10s" wait:"1s" name:"reserve" long:"hash"`, nil},
		{Fields{Key: "a\tb"}, `key:"a\tb"`, nil},
		{Fields{}, `key:""`, ErrMissingKey},
		{Fields{Key: "a", Expire: "0s"}, `key:"a" expire:"0s"`, ErrBadDuration},
		{Fields{Key: "a", Wait: "-1s"}, `key:"a" wait:"-1s"`, ErrBadDuration},
		{Fields{Key: "a", Long: "maybe"}, `key:"a" long:"maybe"`, ErrBadValue},
		{Fields{Key: "a:{path.id"}, `key:"a:{path.id"`, ErrSyntax},
		{Fields{Key: "t:{md.tenant}", Wait: "1s", Limit: "10"}, `key:"t:{md.tenant}" wait:"1s" limit:"10"`, nil},
		{Fields{Key: "a", Limit: "0"}, `key:"a" limit:"0"`, ErrBadValue},
		{Fields{Key: "p:{req.id}", Keep: "5s"}, `key:"p:{req.id}" keep:"5s"`, nil},
		{Fields{Key: "a", Keep: "0"}, `key:"a" keep:"0"`, ErrBadDuration},
		{Fields{Key: "a", Limit: "2", Keep: "1s"}, `key:"a" limit:"2" keep:"1s"`, ErrBadValue},
		{Fields{Key: "i:{req.id}", Mode: "read"}, `key:"i:{req.id}" mode:"read"`, nil},
		{Fields{Key: "a", Mode: "both"}, `key:"a" mode:"both"`, ErrBadValue},
		{Fields{Key: "a", Limit: "2", Mode: "read"}, `key:"a" limit:"2" mode:"read"`, ErrBadValue},
		{Fields{Key: "a", Keep: "1s", Mode: "write"}, `key:"a" keep:"1s" mode:"write"`, ErrBadValue},
	}
	for _, tt := range tests {
		t.Run(tt.tag, func(t *testing.T) {
			got, err := NewSpec(tt.f)
			want, werr := ParseTag(tt.tag)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("NewSpec: %v, want %v", err, tt.want)
			}
			if err != nil {
				var a, b *TagError
				if !errors.As(err, &a) || !errors.As(werr, &b) || a.Field != b.Field || a.Pos != b.Pos || a.Tag != b.Tag {
					t.Fatalf("NewSpec error %v, ParseTag error %v: want the same field and position", err, werr)
				}
				return
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("NewSpec %+v, ParseTag %+v", *got, *want)
			}
		})
	}
}
