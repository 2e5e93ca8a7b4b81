package monitoring

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Dashboard is the part of a Grafana dashboard JSON model this package
// reads: its panels and template variables.
type Dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Variable is a dashboard template variable.
type Variable struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	Query      any    `json:"query"`
	IncludeAll bool   `json:"includeAll"`
	AllValue   string `json:"allValue"`
	Multi      bool   `json:"multi"`
}

// Panel is one dashboard panel.
type Panel struct {
	ID          int         `json:"id"`
	Type        string      `json:"type"`
	Title       string      `json:"title"`
	Description string      `json:"description"`
	Datasource  *Datasource `json:"datasource"`
	GridPos     GridPos     `json:"gridPos"`
	Targets     []Target    `json:"targets"`
	FieldConfig struct {
		Defaults struct {
			Unit   string `json:"unit"`
			Custom struct {
				DrawStyle string `json:"drawStyle"`
			} `json:"custom"`
			Thresholds *struct {
				Steps []struct {
					Color string   `json:"color"`
					Value *float64 `json:"value"`
				} `json:"steps"`
			} `json:"thresholds"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
}

// Datasource names a panel's or target's data source.
type Datasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// GridPos is a panel's place on Grafana's 24-column grid (rows of 30
// pixels).
type GridPos struct {
	H int `json:"h"`
	W int `json:"w"`
	X int `json:"x"`
	Y int `json:"y"`
}

// Target is one query of a panel.
type Target struct {
	RefID        string      `json:"refId"`
	Expr         string      `json:"expr"`
	LegendFormat string      `json:"legendFormat"`
	Datasource   *Datasource `json:"datasource"`
}

// LoadDashboard reads a dashboard JSON file.
func LoadDashboard(path string) (*Dashboard, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d Dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &d, nil
}

// varRef matches a template variable reference: $name, ${name} or
// ${name:format}; Grafana's built-ins start with $__.
var varRef = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::[a-z]+)?\}|\$([A-Za-z0-9_]+)`)

// Expand replaces the template variables in expr with vals: what Grafana
// would send for them. A variable without a value is an error, so a
// dashboard cannot grow a variable its tests do not set.
func Expand(expr string, vals map[string]string) (string, error) {
	var missing []string
	out := varRef.ReplaceAllStringFunc(expr, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		name := m[1] + m[2]
		v, ok := vals[name]
		if !ok {
			missing = append(missing, name)
			return ref
		}
		return v
	})
	if len(missing) > 0 {
		sort.Strings(missing)
		return "", fmt.Errorf("no value for $%s in %q", strings.Join(missing, ", $"), expr)
	}
	return out, nil
}

// Legend formats a series' name the way Grafana does with a legend
// format: {{label}} replaced by the label's value; without a format, the
// series' labels.
func Legend(format string, labels map[string]string) string {
	if format == "" || format == "__auto" {
		var kv []string
		for k, v := range labels {
			if k != "__name__" {
				kv = append(kv, k+"="+v)
			}
		}
		sort.Strings(kv)
		if len(kv) == 0 {
			return "value"
		}
		return strings.Join(kv, ", ")
	}
	return legendRef.ReplaceAllStringFunc(format, func(ref string) string {
		return labels[strings.TrimSpace(ref[2:len(ref)-2])]
	})
}

var legendRef = regexp.MustCompile(`\{\{\s*[A-Za-z_][A-Za-z0-9_]*\s*\}\}`)
