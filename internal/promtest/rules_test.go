package promtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// rulesDir holds the alert rules and their unit tests.
const rulesDir = "../../docs/prometheus"

// TestAlertRules checks docs/prometheus/alerts.yml with `promtool check
// rules` and runs its unit tests (alerts_test.yml) with `promtool test
// rules`; every alert must have a test case where it fires.
func TestAlertRules(t *testing.T) {
	promtool := Binary(t, "promtool")
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = rulesDir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
			continue
		}
		t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
	}

	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string           `yaml:"alertname"`
				ExpAlerts []map[string]any `yaml:"exp_alerts"`
			} `yaml:"alert_rule_test"`
		} `yaml:"tests"`
	}
	readYAML(t, filepath.Join(rulesDir, "alerts.yml"), &rules)
	readYAML(t, filepath.Join(rulesDir, "alerts_test.yml"), &tests)
	fires := map[string]bool{}
	for _, tc := range tests.Tests {
		for _, at := range tc.AlertRuleTest {
			if len(at.ExpAlerts) > 0 {
				fires[at.Alertname] = true
			}
		}
	}
	want := []string{"TxengineNodeHeadStale", "TxengineAccountQueueStuck", "TxengineTransactionFailureRate",
		"TxengineCallbackOutboxBacklog", "TxengineHTTP5xxRate", "TxengineAccountNonceStuck",
		"TxenginePoolTreasuryShort"}
	have := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			have[r.Alert] = true
			if !fires[r.Alert] {
				t.Errorf("alert %s has no test case where it fires", r.Alert)
			}
		}
	}
	for _, a := range want {
		if !have[a] {
			t.Errorf("alerts.yml lacks %s", a)
		}
	}
}

// TestAlertRulesTestsCanFail: promtool test rules fails on a wrong
// expectation, so TestAlertRules' pass means the expectations hold.
func TestAlertRulesTestsCanFail(t *testing.T) {
	promtool := Binary(t, "promtool")
	dir := t.TempDir()
	rules, err := os.ReadFile(filepath.Join(rulesDir, "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile(filepath.Join(rulesDir, "alerts_test.yml"))
	if err != nil {
		t.Fatal(err)
	}
	wrong := strings.Replace(string(tests), "{severity: warning, network: dev}", "{severity: warning, network: main}", 1)
	if wrong == string(tests) {
		t.Fatal("alerts_test.yml no longer has the expectation this test changes")
	}
	for name, data := range map[string]string{"alerts.yml": string(rules), "alerts_test.yml": wrong} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(promtool, "test", "rules", "alerts_test.yml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "TxengineTransactionFailureRate") {
		t.Fatalf("promtool test rules with a wrong expectation: %v\n%s", err, out)
	}
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
