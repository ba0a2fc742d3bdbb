// Package engine is txengine's domain, free of frameworks: the types of
// users, accounts, contracts and transactions, their statuses and the
// transitions between them (transitions.go), the errors the API maps to
// statuses (errors.go), the store contracts (store.go, txstore.go) and the
// send pipeline that turns an accepted transaction into a mined one.
//
// The send pipeline, in the order a transfer takes it:
//   - acceptance: the account actor validates and builds the transaction
//     (build.go, validate.go) and hands it to the group commit
//     (commitqueue.go), which stores it durably with others in one database
//     transaction;
//   - submission: the Sender of each account (sender.go) pumps ready
//     transactions within its adaptive window (window.go): it estimates,
//     assigns gapless nonces, signs (signbatch.go), stores the signed rows
//     and broadcasts, through pumpIO (pumpio.go): batchedIO merges the pumps
//     of every account of a network in the SubmitStage (stage.go),
//     perAccountIO goes directly to the store and node;
//   - in flight: the inFlightLedger (ledger.go) records what was broadcast
//     and reconcileInFlight (replace.go) checks it every block: re-broadcast,
//     fee replacement, nonces used elsewhere, the nonce doctor (doctor.go);
//   - completion: the Follower (follower.go) reads receipts of new heads,
//     completes transactions after their confirmations and undoes what a
//     reorg takes back (reorg.go); conditions (conditions.go: waitForAsset,
//     dependsOn) wake waiting transactions; the Dispatcher (dispatcher.go)
//     delivers callbacks.
//
// Sub-packages by concern: engine/abicodec (the ABI codec) and
// engine/keystore (key custody: sealed keys, rotation, AWS KMS) sit below
// this package and never import it; engine/subscribe (the subscription
// processor), engine/evm (the go-ethereum adapter and the dev chain) and
// engine/prom (Prometheus metrics) sit above it. Each user of the node
// declares the methods it calls; Node (chain.go) is their union, as a
// Network carries it. docs/packages.md draws the graph.
package engine
