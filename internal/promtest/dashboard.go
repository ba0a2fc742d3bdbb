package promtest

import (
	"encoding/json"
	"os"
	"testing"
)

// Dashboard is what the tests read of a Grafana dashboard: its panels'
// queries and its variables.
type Dashboard struct {
	Title  string `json:"title"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
}

// LoadDashboard reads the Grafana dashboard at path.
func LoadDashboard(t testing.TB, path string) Dashboard {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d Dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dashboard %s is not JSON: %v", path, err)
	}
	return d
}
