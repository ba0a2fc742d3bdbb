package main

import (
	"runtime/debug"

	"github.com/txengine/txengine/actors/callbacks"
	"github.com/txengine/txengine/config"
	"github.com/txengine/txengine/engine"
)

// callbacksConfig returns the callback dispatcher's configuration. Private
// addresses follow cfg.CallbacksAllowPrivate: allowed on the embedded
// default unless configured, refused with configured networks unless
// configured; the API's URL check uses the same value. secrets opens the
// users' sealed callback secrets.
func callbacksConfig(cfg config.Config, secrets engine.CallbackSecrets) callbacks.Config {
	c := callbacks.Default()
	c.Dispatcher.Secrets = secrets
	c.Dispatcher.AllowPrivate = cfg.CallbacksAllowPrivate()
	c.Dispatcher.Timeout = cfg.Callbacks.Timeout
	c.Dispatcher.Concurrency = cfg.Callbacks.Concurrency
	c.Dispatcher.UserAgent = "txengine/" + version()
	c.Retention = cfg.Callbacks.Retention
	return c
}

// version is the module version the binary was built from ("dev" for a
// build without one).
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
