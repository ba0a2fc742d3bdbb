// Command median prints the table of `make bench` with the median of each
// row over several saved runs (the JSON files that BENCH_OUT names).
//
//	go run ./bench/median bench/results/run-*.json
package main

import (
	"fmt"
	"os"

	"github.com/txengine/txengine/bench/benchtable"
)

func main() {
	runs, err := benchtable.ReadRuns(os.Args[1:])
	if err != nil || len(runs) == 0 {
		fmt.Fprintf(os.Stderr, "median: %v (usage: median run.json...)\n", err)
		os.Exit(2)
	}
	benchtable.Markdown(os.Stdout, benchtable.Medians(runs))
}
