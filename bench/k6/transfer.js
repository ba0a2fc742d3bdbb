// k6 load script for txengine: token transfers from the operator's default
// account (or FROM, an account id of the operator) to fresh random
// addresses, with a constant arrival rate. See bench/k6/README.md.
//
//   k6 run -e URL=http://127.0.0.1:8080 -e TOKEN=txe_... -e TOKEN_ID=<contract id> bench/k6/transfer.js
import http from 'k6/http';
import { check } from 'k6';
import { Counter } from 'k6/metrics';

const URL = (__ENV.URL || 'http://127.0.0.1:8080').replace(/\/+$/, '');
const TOKEN = __ENV.TOKEN;
const TOKEN_ID = __ENV.TOKEN_ID;
const FROM = __ENV.FROM || '';
const RATE = parseInt(__ENV.RATE || '500', 10);
const DURATION = __ENV.DURATION || '30s';
const VUS = parseInt(__ENV.VUS || '64', 10);

if (!TOKEN || !TOKEN_ID) {
  throw new Error('set -e TOKEN=<operator token> -e TOKEN_ID=<token contract id>');
}

export const options = {
  scenarios: {
    transfers: {
      executor: 'constant-arrival-rate',
      rate: RATE,
      timeUnit: '1s',
      duration: DURATION,
      preAllocatedVUs: VUS,
      maxVUs: VUS * 4,
    },
  },
  thresholds: {
    // P3's target: accept latency p99 <= 10 ms at half the maximum rate.
    'http_req_duration{name:transfer}': ['p(99)<10'],
    checks: ['rate>0.999'],
  },
};

const errorsByCode = new Counter('txengine_errors');

function randomAddress() {
  const hex = '0123456789abcdef';
  let s = '0x';
  for (let i = 0; i < 40; i++) {
    s += hex[Math.floor(Math.random() * 16)];
  }
  return s;
}

const params = {
  headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
  tags: { name: 'transfer' },
};

export default function () {
  const body = { to: randomAddress(), value: '1' };
  if (FROM) {
    body.from = FROM;
  }
  const res = http.post(`${URL}/tokens/${TOKEN_ID}/transfers`, JSON.stringify(body), params);
  const ok = check(res, {
    'status 202': (r) => r.status === 202,
    'status new': (r) => r.status === 202 && r.json('data.status') === 'new',
  });
  if (!ok) {
    let code = `http_${res.status}`;
    try {
      code = res.json('error.code') || code;
    } catch (e) {
      // not JSON: keep the HTTP status
    }
    errorsByCode.add(1, { code: code });
  }
}
