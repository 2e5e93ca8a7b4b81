package httprecord_test

import (
	"testing"

	"github.com/locktag/locktag/locker/guard/httprecord"
)

func TestCanonicalPath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/orders/7", "/orders/7"},
		{"/k/%e6%97%a5", "/k/%E6%97%A5"},
		{"/k/\xe6\x97\xa5", "/k/%E6%97%A5"},
		{"/k/%41%7e%2d", "/k/A~-"},
		{"/k/a b", "/k/a%20b"},
		{"/k/a%20b", "/k/a%20b"},
		{"/k/x%2Fy+z", "/k/x%2Fy+z"},
		{"/k/x%2fy", "/k/x%2Fy"},
		{"/k/x/y", "/k/x/y"},
		{"/k/50%", "/k/50%25"},
		{"/k/%zz", "/k/%25zz"},
		{"/k/:@!$&'()*,;=", "/k/:@!$&'()*,;="},
		{"/k/\"<>", "/k/%22%3C%3E"},
	} {
		if got := httprecord.CanonicalPath(tc.in); got != tc.want {
			t.Errorf("CanonicalPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCanonicalHeaders(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"application/json", "application/json"},
		{"Application/JSON; Charset=UTF-8", "application/json; charset=utf-8"},
		{"multipart/form-data; boundary=AbC", "multipart/form-data; boundary=AbC"},
		{"text/plain;b=2;a=1", "text/plain; a=1; b=2"},
		{"not a type", "not a type"},
	} {
		if got := httprecord.CanonicalMediaType(tc.in); got != tc.want {
			t.Errorf("CanonicalMediaType(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"identity", ""},
		{"GZip", "gzip"},
		{"gzip , br", "gzip,br"},
	} {
		if got := httprecord.CanonicalEncoding(tc.in); got != tc.want {
			t.Errorf("CanonicalEncoding(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestRouteName(t *testing.T) {
	for _, tc := range []struct{ method, route, want string }{
		{"POST", "/orders/:id/pay", "POST /orders/:id/pay"},
		{"POST", "POST /orders/{id}/pay", "POST /orders/{id}/pay"},
		{"HEAD", "GET /orders/{id}", "GET /orders/{id}"},
		{"GET", "example.com/x", "GET example.com/x"},
		{"GET", "", "GET"},
	} {
		if got := httprecord.RouteName(tc.method, tc.route); got != tc.want {
			t.Errorf("RouteName(%q, %q) = %q, want %q", tc.method, tc.route, got, tc.want)
		}
	}
}
