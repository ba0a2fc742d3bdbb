package rpcproxy

import "time"

// decision is what the proxy does with one request.
type decision struct {
	// refused holds the injected error of each call answered by the proxy.
	refused map[int]*Error
	// reset: reset before forwarding; lose: forward, then lose the answer
	// (gateway: as a 502).
	reset, lose, gateway bool
	// rateLimited is the error of a 429, nil when not rate limited.
	rateLimited *Error
	delay       time.Duration
	// refuseBatch is how a refused batch is answered (BatchesPass: not
	// refused).
	refuseBatch BatchRefusal
}

// account counts the request and decides its faults: resets first, then a
// Provider's draws, the faults set per method, and the refusals (those set
// per method or by a rule first, then busy's: the busy mempool's).
func (p *Proxy) account(calls []call, batch bool, busy map[int]*Error) (d decision) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stats.Requests++
	if batch {
		p.stats.Batches++
		p.stats.BatchCalls += len(calls)
	}
	for _, c := range calls {
		p.stats.Calls[c.Method]++
	}
	if batch && p.batchRefusal != BatchesPass {
		p.stats.RefusedBatches++
		d.refuseBatch = p.batchRefusal
		return d
	}
	if p.resetNext > 0 {
		p.resetNext--
		d.reset = true
	}
	for _, c := range calls {
		if !d.reset && take(p.resetOn, c.Method) {
			d.reset = true
		}
	}
	if d.reset {
		p.stats.Reset++
		return d
	}
	pd := p.draw(p.sends(calls, busy))
	if pd.rateLimited {
		p.stats.RateLimited++
		e := p.provider.RateLimit
		d.rateLimited = &e
		return d
	}
	for _, c := range calls {
		if !d.lose && take(p.loseOn, c.Method) {
			d.lose = true
		}
	}
	d.delay = max(p.delay[""], pd.slow)
	for _, c := range calls {
		d.delay = max(d.delay, p.delay[c.Method])
	}
	if d.delay > 0 {
		p.stats.Delayed++
	}
	if d.lose {
		p.stats.Lost++
		return d
	}
	d.refused = p.refusals(calls)
	for i, e := range busy {
		if _, ok := d.refused[i]; ok {
			continue
		}
		if d.refused == nil {
			d.refused = map[int]*Error{}
		}
		d.refused[i] = e
		p.stats.PoolFull++
	}
	if pd.lose {
		d.lose, d.gateway = true, pd.gateway
		p.stats.Lost++
		if pd.gateway {
			p.stats.Gateway++
		}
	}
	return d
}

// sends reports whether calls hold an eth_sendRawTransaction that no rule,
// Refuse or the busy mempool refuses (p.mu held).
func (p *Proxy) sends(calls []call, busy map[int]*Error) bool {
	for i, c := range calls {
		if c.Method == "eth_sendRawTransaction" && p.ruleFor(c) == nil && p.refuse[c.Method] == nil && busy[i] == nil {
			return true
		}
	}
	return false
}

// ruleFor returns the first rule that refuses c, nil when none (p.mu held).
func (p *Proxy) ruleFor(c call) *rule {
	for i := range p.rules {
		if p.rules[i].matches(c) {
			return &p.rules[i]
		}
	}
	return nil
}

// refusals returns the injected error of each refused call, by a rule or
// by Refuse (whose count it takes), and counts them (p.mu held).
func (p *Proxy) refusals(calls []call) map[int]*Error {
	var refused map[int]*Error
	for i, c := range calls {
		var e Error
		if r := p.ruleFor(c); r != nil {
			e = r.err
		} else if rf, ok := p.refuse[c.Method]; ok {
			e = rf.err
			if rf.times > 0 {
				if rf.times--; rf.times == 0 {
					delete(p.refuse, c.Method)
				}
			}
		} else {
			continue
		}
		if refused == nil {
			refused = map[int]*Error{}
		}
		refused[i] = &e
		p.stats.Refused++
	}
	return refused
}

// take consumes one of the faults left for method in m and reports whether
// there was one.
func take(m map[string]int, method string) bool {
	left, ok := m[method]
	if !ok {
		return false
	}
	switch {
	case left == 1:
		delete(m, method)
	case left > 1:
		m[method] = left - 1
	}
	return true
}
