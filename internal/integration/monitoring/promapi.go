package monitoring

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Client talks to a Prometheus server's HTTP API (/api/v1).
type Client struct {
	URL  string // e.g. http://127.0.0.1:9090
	HTTP *http.Client
}

// Series is one series of a query result: its labels and its samples
// (one for an instant query).
type Series struct {
	Labels  map[string]string
	Samples []Sample
}

// Sample is one value at one time. Value may be NaN (a histogram_quantile
// of no observations) or ±Inf.
type Sample struct {
	T time.Time
	V float64
}

// Alert is an alert as /api/v1/alerts lists it.
type Alert struct {
	Labels map[string]string `json:"labels"`
	State  string            `json:"state"` // "pending" or "firing"
}

// Rule is an alerting or recording rule as /api/v1/rules lists it.
type Rule struct {
	Name      string `json:"name"`
	Query     string `json:"query"`
	Health    string `json:"health"` // "ok", "err" or "unknown" (not evaluated yet)
	LastError string `json:"lastError"`
	Type      string `json:"type"`
	State     string `json:"state"`
}

type apiReply struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
}

func (c *Client) get(ctx context.Context, path string, q url.Values, data any) error {
	u := c.URL + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	var r apiReply
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("prometheus %s: %s: %.200s", path, resp.Status, b)
	}
	if r.Status != "success" {
		return fmt.Errorf("prometheus %s: %s: %s", path, r.ErrorType, r.Error)
	}
	return json.Unmarshal(r.Data, data)
}

type queryData struct {
	ResultType string          `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

type rawSeries struct {
	Metric map[string]string `json:"metric"`
	Value  []any             `json:"value"`
	Values [][]any           `json:"values"`
}

// Query runs an instant query at t.
func (c *Client) Query(ctx context.Context, expr string, t time.Time) ([]Series, error) {
	var d queryData
	q := url.Values{"query": {expr}, "time": {formatTime(t)}}
	if err := c.get(ctx, "/api/v1/query", q, &d); err != nil {
		return nil, err
	}
	return decodeResult(d)
}

// QueryRange runs a range query from start to end, one evaluation a step.
func (c *Client) QueryRange(ctx context.Context, expr string, start, end time.Time, step time.Duration) ([]Series, error) {
	var d queryData
	q := url.Values{"query": {expr}, "start": {formatTime(start)}, "end": {formatTime(end)},
		"step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	if err := c.get(ctx, "/api/v1/query_range", q, &d); err != nil {
		return nil, err
	}
	return decodeResult(d)
}

// Alerts lists the pending and firing alerts.
func (c *Client) Alerts(ctx context.Context) ([]Alert, error) {
	var d struct {
		Alerts []Alert `json:"alerts"`
	}
	err := c.get(ctx, "/api/v1/alerts", nil, &d)
	return d.Alerts, err
}

// Rules lists the loaded rules.
func (c *Client) Rules(ctx context.Context) ([]Rule, error) {
	var d struct {
		Groups []struct {
			Rules []Rule `json:"rules"`
		} `json:"groups"`
	}
	if err := c.get(ctx, "/api/v1/rules", nil, &d); err != nil {
		return nil, err
	}
	var out []Rule
	for _, g := range d.Groups {
		out = append(out, g.Rules...)
	}
	return out, nil
}

func decodeResult(d queryData) ([]Series, error) {
	switch d.ResultType {
	case "vector", "matrix":
	case "scalar":
		var v []any
		if err := json.Unmarshal(d.Result, &v); err != nil {
			return nil, err
		}
		s, err := sample(v)
		if err != nil {
			return nil, err
		}
		return []Series{{Labels: map[string]string{}, Samples: []Sample{s}}}, nil
	default:
		return nil, fmt.Errorf("prometheus: result type %q", d.ResultType)
	}
	var raw []rawSeries
	if err := json.Unmarshal(d.Result, &raw); err != nil {
		return nil, err
	}
	out := make([]Series, 0, len(raw))
	for _, r := range raw {
		s := Series{Labels: r.Metric}
		if r.Value != nil {
			r.Values = append(r.Values, r.Value)
		}
		for _, v := range r.Values {
			smp, err := sample(v)
			if err != nil {
				return nil, err
			}
			s.Samples = append(s.Samples, smp)
		}
		out = append(out, s)
	}
	return out, nil
}

// sample decodes [unix seconds, "value"].
func sample(v []any) (Sample, error) {
	if len(v) != 2 {
		return Sample{}, fmt.Errorf("prometheus: sample %v", v)
	}
	ts, ok1 := v[0].(float64)
	str, ok2 := v[1].(string)
	if !ok1 || !ok2 {
		return Sample{}, fmt.Errorf("prometheus: sample %v", v)
	}
	f, err := strconv.ParseFloat(str, 64)
	if err != nil {
		return Sample{}, fmt.Errorf("prometheus: sample value %q: %w", str, err)
	}
	sec, frac := math.Modf(ts)
	return Sample{T: time.Unix(int64(sec), int64(frac*1e9)), V: f}, nil
}

func formatTime(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixNano())/1e9, 'f', 3, 64)
}
