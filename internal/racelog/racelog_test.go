package racelog

import (
	"strings"
	"testing"
)

func TestReports(t *testing.T) {
	out := `time=... level=INFO msg=started
==================
WARNING: DATA RACE
Write at 0x00c000 by goroutine 7:
  main.a()
Previous read at 0x00c000 by goroutine 6:
  main.b()
==================
time=... level=INFO msg=more
==================
WARNING: DATA RACE
Read at 0x00c008 by goroutine 9:
  main.c()
`
	got := Reports(out)
	if len(got) != 2 {
		t.Fatalf("%d reports, want 2: %q", len(got), got)
	}
	if !strings.Contains(got[0], "main.b()") || strings.Contains(got[0], "msg=more") || !strings.HasSuffix(got[0], "==================") {
		t.Errorf("first report %q", got[0])
	}
	if !strings.HasPrefix(got[1], Marker) || !strings.Contains(got[1], "main.c()") {
		t.Errorf("second report (unterminated) %q", got[1])
	}
	if r := Reports("level=INFO msg=clean\n"); r != nil {
		t.Errorf("clean output: %q", r)
	}
}

func TestOurs(t *testing.T) {
	library := `WARNING: DATA RACE
Read at 0x00c00281ab70 by goroutine 318:
  runtime.mapaccess2_faststr()
      /usr/local/go/src/internal/runtime/maps/runtime_faststr.go:161 +0x0
  github.com/asynkron/protoactor-go/cluster.(*MemberSet).ContainsID()
      /root/go/pkg/mod/github.com/asynkron/protoactor-go/cluster/members.go:38 +0x339

Previous write at 0x00c00281ab70 by goroutine 200:
  github.com/asynkron/protoactor-go/cluster.NewMemberSet()
      /root/go/pkg/mod/github.com/asynkron/protoactor-go/cluster/members.go:20 +0x1

Goroutine 318 (running) created at:
  github.com/txengine/txengine/actors.Start()
      /work/main/actors/system.go:100 +0x1
==================`
	if Ours(library) {
		t.Error("a race between two accesses inside protoactor-go counted as ours (our frame is only in a creation stack)")
	}
	ours := strings.Replace(library, "  github.com/asynkron/protoactor-go/cluster.NewMemberSet()", "  github.com/txengine/txengine/actors.(*System).Wake()", 1)
	if !Ours(ours) {
		t.Error("a race with one access in our code not counted as ours")
	}
	// Our code called into the library, which raced with itself: the
	// library's race.
	shutdown := `WARNING: DATA RACE
Write at 0x00c0004c27f0 by main goroutine:
  github.com/asynkron/protoactor-go/remote.(*endpointReader).suspend()
      /root/go/pkg/mod/github.com/asynkron/protoactor-go/remote/endpoint_reader.go:255 +0x30
  github.com/asynkron/protoactor-go/cluster.(*Cluster).Shutdown()
      /root/go/pkg/mod/github.com/asynkron/protoactor-go/cluster/cluster.go:154 +0x22e
  github.com/txengine/txengine/actors.(*System).close()
      /work/main/actors/system.go:483 +0x1b9d
  main.run()
      /work/main/cmd/txengine/main.go:76 +0x893

Previous read at 0x00c0004c27f0 by goroutine 19987:
  github.com/asynkron/protoactor-go/remote.(*endpointReader).Receive()
      /root/go/pkg/mod/github.com/asynkron/protoactor-go/remote/endpoint_reader.go:75 +0x375
==================`
	if Ours(shutdown) {
		t.Error("a race inside protoactor-go, reached from our Shutdown call, counted as ours")
	}
	// The standard library reading our value for us: ours.
	viaStd := strings.Replace(shutdown, "  github.com/asynkron/protoactor-go/remote.(*endpointReader).suspend()", "  runtime.mapaccess2_faststr()\n      /usr/local/go/src/runtime/map.go:1 +0x0\n  encoding/json.Marshal()\n      /usr/local/go/src/encoding/json/encode.go:1 +0x0\n  github.com/txengine/txengine/engine.(*Sender).Pump()", 1)
	if !Ours(viaStd) {
		t.Error("a race where the standard library read for our code not counted as ours")
	}
	inMain := strings.Replace(shutdown, "  github.com/asynkron/protoactor-go/remote.(*endpointReader).suspend()", "  main.run()", 1)
	if !Ours(inMain) {
		t.Error("a race in our main package not counted as ours")
	}
}

func TestSplit(t *testing.T) {
	geth := `==================
WARNING: DATA RACE
Read at 0x00c000400f10 by goroutine 204:
  github.com/ethereum/go-ethereum/core/state.(*StateDB).setError()
      /root/go/pkg/mod/github.com/ethereum/go-ethereum@v1.17.8/core/state/statedb.go:244 +0x3a4
  golang.org/x/sync/errgroup.(*Group).Go.func1()
      /root/go/pkg/mod/golang.org/x/sync@v0.23.0/errgroup/errgroup.go:93 +0x86

Previous write at 0x00c000400f10 by goroutine 205:
  github.com/ethereum/go-ethereum/core/state.(*StateDB).setError()
      /root/go/pkg/mod/github.com/ethereum/go-ethereum@v1.17.8/core/state/statedb.go:245 +0x3c4

Goroutine 204 (running) created at:
  github.com/ethereum/go-ethereum/core/state.(*StateDB).IntermediateRoot()
      /root/go/pkg/mod/github.com/ethereum/go-ethereum@v1.17.8/core/state/statedb.go:1014 +0x7c4
==================
`
	ours := strings.Replace(geth, "Previous write at 0x00c000400f10 by goroutine 205:\n  github.com/ethereum/go-ethereum/core/state.(*StateDB).setError()",
		"Previous write at 0x00c000400f10 by goroutine 205:\n  github.com/txengine/txengine/engine.(*Watcher).head()", 1)
	out := "level=INFO msg=a\n" + geth + "level=INFO msg=b\n" + geth + ours
	mine, library := Split(out)
	if len(mine) != 1 || !strings.Contains(mine[0], "engine.(*Watcher).head()") {
		t.Errorf("ours: %q, want the one report with our frame", mine)
	}
	want := "2 report(s): github.com/ethereum/go-ethereum/core/state.(*StateDB).setError() vs github.com/ethereum/go-ethereum/core/state.(*StateDB).setError()"
	if len(library) != 1 || library[0] != want {
		t.Errorf("library: %q, want [%q]", library, want)
	}
}
