package middleware

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

// TestBodyParsedOnce: two {body...} placeholders of one request share one
// read and one parse.
func TestBodyParsedOnce(t *testing.T) {
	gin.SetMode(gin.TestMode)
	c, _ := gin.CreateTestContext(httptest.NewRecorder())
	c.Request = httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"a":1,"b":"x"}`))
	first := loadBody(c, 1<<20)
	if first.Err != nil {
		t.Fatal(first.Err)
	}
	if second := loadBody(c, 1<<20); second != first {
		t.Fatal("the body was parsed twice")
	}
	limit := int64(1 << 20)
	for path, want := range map[string]string{"a": "1", "b": "x"} {
		if got, err := bodyGetter(path, &limit)(c); got != want || err != nil {
			t.Errorf("body.%s = %q, %v; want %q", path, got, err, want)
		}
	}
}
