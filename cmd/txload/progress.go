package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// progressMode selects how progress is shown.
type progressMode int

const (
	progressNone  progressMode = iota // --json or --quiet: nothing
	progressLines                     // not a terminal: a plain line every few seconds
	progressBar                       // a terminal: a bar redrawn in place
)

// progress shows how far the current phase is. Counters are atomic; the
// drawing goroutine is owned by the progress and ends with stop.
type progress struct {
	mode  progressMode
	w     io.Writer
	every time.Duration

	mu    sync.Mutex // guards name, total, began
	name  string
	total int
	began time.Time
	done  atomic.Int64

	quit chan struct{}
	wg   sync.WaitGroup
}

// newProgress starts the drawing goroutine (none for progressNone).
func newProgress(mode progressMode, w io.Writer) *progress {
	p := &progress{mode: mode, w: w, quit: make(chan struct{}), every: 2 * time.Second}
	if mode == progressBar {
		p.every = 200 * time.Millisecond
	}
	if mode != progressNone {
		p.wg.Add(1)
		go p.loop()
	}
	return p
}

// phase starts a new phase of total steps.
func (p *progress) phase(name string, total int) {
	p.draw(true)
	p.mu.Lock()
	p.name, p.total, p.began = name, total, time.Now()
	p.done.Store(0)
	p.mu.Unlock()
}

// add counts n steps done.
func (p *progress) add(n int) { p.done.Add(int64(n)) }

// set sets the steps done.
func (p *progress) set(n int) { p.done.Store(int64(n)) }

// stop draws the last state and ends the drawing goroutine.
func (p *progress) stop() {
	close(p.quit)
	p.wg.Wait()
	p.draw(true)
}

func (p *progress) loop() {
	defer p.wg.Done()
	t := time.NewTicker(p.every)
	defer t.Stop()
	for {
		select {
		case <-p.quit:
			return
		case <-t.C:
			p.draw(false)
		}
	}
}

// draw renders the current phase; final ends a bar's line.
func (p *progress) draw(final bool) {
	p.mu.Lock()
	name, total, began := p.name, p.total, p.began
	p.mu.Unlock()
	if p.mode == progressNone || name == "" {
		return
	}
	done := int(p.done.Load())
	el := time.Since(began)
	rate := 0.0
	if el > 0 {
		rate = float64(done) / el.Seconds()
	}
	switch p.mode {
	case progressBar:
		fmt.Fprintf(p.w, "\r%s", renderBar(name, done, total, rate, el, 30))
		if final {
			fmt.Fprintln(p.w)
		}
	case progressLines:
		if final && done == 0 {
			return
		}
		fmt.Fprintf(p.w, "%s: %d/%d (%.0f/s, %s)\n", name, done, total, rate, el.Round(100*time.Millisecond))
	}
}

// renderBar formats one progress bar line of the given width.
func renderBar(name string, done, total int, rate float64, el time.Duration, width int) string {
	frac := 0.0
	if total > 0 {
		frac = float64(done) / float64(total)
	}
	frac = min(max(frac, 0), 1)
	full := int(frac * float64(width))
	bar := strings.Repeat("#", full) + strings.Repeat(".", width-full)
	return fmt.Sprintf("%-16s [%s] %3.0f%% %d/%d %.0f/s %s ", name, bar, frac*100, done, total, rate, el.Round(100*time.Millisecond))
}
