package actors

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/txengine/txengine/actors/pools"
	"github.com/txengine/txengine/actors/subscriptions"
	"github.com/txengine/txengine/engine"
)

// subscriptionProps returns the props of the subscriptions actor of net,
// whose writes carry fence.
func (s *System) subscriptionProps(net *engine.Network, fence engine.NetworkFence) (*actor.Props, error) {
	observe := func(network string, res engine.SubscriptionResult, err error) {
		if s.cfg.Metrics != nil {
			s.cfg.Metrics.SubscriptionPoll(network, res, err)
		}
		if res.Delivered+res.Retracted > 0 {
			s.NudgeCallbacks() // their callbacks go out now, not at the next poll of the outbox
		}
	}
	props, err := subscriptions.Props(subscriptions.Config{
		Network: net, Store: s.cfg.Store, Fence: fence, Clock: s.cfg.Clock, Log: s.cfg.Log, Observe: observe,
	})
	if err != nil {
		return nil, fmt.Errorf("start subscriptions of %s: %w", net.Name, err)
	}
	return props, nil
}

// newHeadTo returns the watcher's OnHead that tells pid (a subscriptions
// actor) and keeper (the pool keeper; nil: none) of each new head.
func (s *System) newHeadTo(pid, keeper *actor.PID) func(uint64) {
	root := s.sys.Root
	return func(head uint64) {
		root.Send(pid, &subscriptions.NewHead{Number: head})
		if keeper != nil {
			root.Send(keeper, &pools.NewHead{Number: head})
		}
	}
}
