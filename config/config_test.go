package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaultsAndEnv(t *testing.T) {
	cfg, err := Load("", env(map[string]string{"TXENGINE_LISTEN": "127.0.0.1:0", "TXENGINE_DATA_DIR": "/tmp/x", "TXENGINE_DEV_BLOCK_PERIOD": "250ms"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Listen != "127.0.0.1:0" || cfg.DataDir != "/tmp/x" || cfg.Dev.BlockPeriod != 250*time.Millisecond {
		t.Fatalf("env not applied: %+v", cfg)
	}
	if cfg.Engine.InFlight != 64 || cfg.Log.Format != "text" {
		t.Fatalf("defaults lost: %+v", cfg)
	}
}

func TestValidationNamesKey(t *testing.T) {
	tests := []struct {
		env map[string]string
		key string
	}{
		{map[string]string{"TXENGINE_LISTEN": "nonsense"}, "listen"},
		{map[string]string{"TXENGINE_MASTER_KEY": "abcd"}, "masterKey"},
		{map[string]string{"TXENGINE_PREVIOUS_MASTER_KEYS": strings.Repeat("ab", 32) + ",zz"}, "previousMasterKeys[1]"},
		{map[string]string{"TXENGINE_LOG_FORMAT": "xml"}, "log.format"},
		{map[string]string{"TXENGINE_IN_FLIGHT": "0"}, "engine.inFlight"},
		{map[string]string{"TXENGINE_IN_FLIGHT": "x"}, "TXENGINE_IN_FLIGHT"},
		{map[string]string{"TXENGINE_DEV_BLOCK_PERIOD": "soon"}, "TXENGINE_DEV_BLOCK_PERIOD"},
	}
	for _, tt := range tests {
		_, err := Load("", env(tt.env))
		if err == nil || !strings.HasPrefix(err.Error(), tt.key) {
			t.Errorf("env %v: err = %v, want it to start with %q", tt.env, err, tt.key)
		}
	}
}

func TestFileUnknownKeyRejected(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(p, []byte("listen: 127.0.0.1:9999\nlistne: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(p, env(nil)); err == nil || !strings.Contains(err.Error(), "listne") {
		t.Fatalf("err = %v, want unknown key named", err)
	}
	if err := os.WriteFile(p, []byte("listen: 127.0.0.1:9999\nengine:\n  inFlight: 8\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(p, env(nil))
	if err != nil || cfg.Listen != "127.0.0.1:9999" || cfg.Engine.InFlight != 8 {
		t.Fatalf("cfg=%+v err=%v", cfg, err)
	}
}

func TestPreviousMasterKeysFromEnv(t *testing.T) {
	a, b := strings.Repeat("ab", 32), strings.Repeat("cd", 32)
	cfg, err := Load("", env(map[string]string{"TXENGINE_PREVIOUS_MASTER_KEYS": " " + a + ", ," + b}))
	if err != nil {
		t.Fatal(err)
	}
	keys := cfg.PreviousMasterKeyBytes()
	if len(cfg.PreviousMasterKeys) != 2 || len(keys) != 2 || keys[0][0] != 0xab || keys[1][0] != 0xcd || len(keys[1]) != 32 {
		t.Fatalf("previous master keys %q -> %x", cfg.PreviousMasterKeys, keys)
	}
}
