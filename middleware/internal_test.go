package middleware

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
)

func TestRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		wait time.Duration
		want string
	}{
		{0, "1"}, {time.Millisecond, "1"}, {time.Second, "1"},
		{time.Second + time.Millisecond, "2"}, {2500 * time.Millisecond, "3"}, {time.Minute, "60"},
	} {
		if got := retryAfter(tc.wait); got != tc.want {
			t.Errorf("retryAfter(%v) = %q, want %q", tc.wait, got, tc.want)
		}
	}
}

// TestBodyParsedOnce: two {body...} placeholders of one request share one
// read and one parse.
func TestBodyParsedOnce(t *testing.T) {
	gin.SetMode(gin.TestMode)
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	c.Request = httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"a":1,"b":"x"}`))
	first := loadBody(c, 1<<20)
	if first.err != nil {
		t.Fatal(first.err)
	}
	if second := loadBody(c, 1<<20); second != first {
		t.Fatal("the body was parsed twice")
	}
	for path, want := range map[string]string{"a": "1", "b": "x"} {
		if got, err := bodyGetter(path, 1<<20)(c); got != want || err != nil {
			t.Errorf("body.%s = %q, %v; want %q", path, got, err, want)
		}
	}
}
