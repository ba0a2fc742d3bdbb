// Compiled with `tsc --noEmit` against api.d.ts, the types openapi-typescript
// generates from http/openapi.json (client's TestTypeScriptClient): what an
// integrator writes against the document must type-check, and what the
// document rules out must not (each @ts-expect-error must be an error).
import type { components, operations, paths } from "./api";

type Transaction = components["schemas"]["Transaction"];
type TransferBody = NonNullable<paths["/tokens/{contractId}/transfers"]["post"]["requestBody"]>["content"]["application/json"];
type Accepted = paths["/tokens/{contractId}/transfers"]["post"]["responses"][202]["content"]["application/json"];
type ErrorBody = components["schemas"]["ErrorResponse"];
type NetworkTokenPath = operations["networkToken"]["parameters"]["path"];
type ListTransactionsQuery = NonNullable<operations["listTransactions"]["parameters"]["query"]>;

const body: TransferBody = { to: "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", value: "1000" };

// parameters is an array of strings, as the specification says.
function parameters(tx: Transaction): string[] {
  return tx.parameters;
}

function created(res: Accepted): string {
  const tx: Transaction = res.data;
  return `${tx.id} ${tx.status} ${parameters(tx).join(",")}`;
}

function describe(err: ErrorBody): string {
  return err.error.field ? `${err.error.code} on ${err.error.field}` : err.error.code;
}

// The network of /tokens/{network}/{address} is named network.
const token: NetworkTokenPath = { network: "dev", address: body.to };
// @ts-expect-error the position is not called contractId
const wrong: NetworkTokenPath = { contractId: "dev", address: body.to };

// Lists are paged with limit and cursor.
const page: ListTransactionsQuery = { limit: 100, cursor: "opaque" };

// @ts-expect-error a status outside the enum
const badStatus: Transaction["status"] = "pending";

// A subscription's deliveries: the pull list always carries next (a
// poller continues from it), a callback body wraps one delivery in event.
type EventsPage = operations["listSubscriptionEvents"]["responses"][200]["content"]["application/json"];
type EventCallback = components["schemas"]["EventCallback"];
type NewSubscription = components["schemas"]["CreateSubscriptionRequest"];

function poll(p: EventsPage): string {
  const removed = p.data.filter((ev) => ev.removed).map((ev) => `${ev.sequence} ${ev.transactionHash}`);
  return `${removed.join(",")} ${p.next}`;
}

function delivered(cb: EventCallback): string {
  return `${cb.event.id} ${cb.event.event} ${cb.event.blockNumber}`;
}

const deposits: NewSubscription = { kind: "deposits", network: "dev", fromBlock: "latest" };
const fromPast: NewSubscription = { contractId: "00000000-0000-0000-0000-000000000000", event: "Transfer", fromBlock: 0, filters: { to: body.to } };
// @ts-expect-error a kind outside the enum
const badKind: NewSubscription = { kind: "blocks", network: "dev" };

export { body, created, describe, token, wrong, page, badStatus, poll, delivered, deposits, fromPast, badKind };
