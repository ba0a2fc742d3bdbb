package config

import (
	"strings"
	"testing"
	"time"
)

// TestKMSDefaultsEnvAndValidate: KMS is off by default with its bounds
// set; the environment turns it on and sets region, endpoint, bound and
// timeout; bad values are refused naming the key; an endpoint with
// credentials is refused without echoing them.
func TestKMSDefaultsEnvAndValidate(t *testing.T) {
	cfg, err := Load("", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.KMS.Enabled || cfg.KMS.Concurrency != 32 || cfg.KMS.CallTimeout != 5*time.Second || cfg.KMS.Retries != 4 {
		t.Fatalf("defaults %+v", cfg.KMS)
	}
	cfg, err = Load("", env(map[string]string{
		"TXENGINE_KMS_ENABLED": "true", "TXENGINE_KMS_REGION": "eu-west-2", "TXENGINE_KMS_ENDPOINT": "http://127.0.0.1:4599",
		"TXENGINE_KMS_CONCURRENCY": "8", "TXENGINE_KMS_CALL_TIMEOUT": "2s",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.KMS.Enabled || cfg.KMS.Region != "eu-west-2" || cfg.KMS.Endpoint != "http://127.0.0.1:4599" || cfg.KMS.Concurrency != 8 || cfg.KMS.CallTimeout != 2*time.Second {
		t.Fatalf("from the environment %+v", cfg.KMS)
	}
	for _, c := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"TXENGINE_KMS_CONCURRENCY": "0"}, "kms.concurrency"},
		{map[string]string{"TXENGINE_KMS_CALL_TIMEOUT": "1ms"}, "kms.callTimeout"},
		{map[string]string{"TXENGINE_KMS_ENDPOINT": "localhost:4599"}, "kms.endpoint"},
		{map[string]string{"TXENGINE_KMS_ENDPOINT": "https://AKIAEXAMPLE:s3cr3t@kms.example"}, "kms.endpoint"},
		{map[string]string{"TXENGINE_KMS_ENABLED": "yes please"}, "TXENGINE_KMS_ENABLED"},
	} {
		_, err := Load("", env(c.env))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error naming %s", c.env, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("the error echoes the credentials: %v", err)
		}
	}
	bad := Default()
	bad.KMS.Retries = 11
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "kms.retries") {
		t.Errorf("retries 11: %v", err)
	}
}
