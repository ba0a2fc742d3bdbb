#!/usr/bin/env bash
# Compiles the Solidity sources of this directory into build/<Name>.abi and
# build/<Name>.bin with solc-js from the npm registry (pinned below). The
# artifacts are committed, so building the service needs no compiler; run
# this script only after changing a .sol file.
set -euo pipefail

SOLC_VERSION=0.8.28 # keep in step with the pragma of the sources
EVM_VERSION=cancun  # accepted by go-ethereum dev chains and current networks
CONTRACTS=(TxToken SecurityToken SystemNFT Disperse)

cd "$(dirname "$0")"
if [[ "$(node -p 'try { require("./.solc/node_modules/solc/package.json").version } catch { "" }')" != "$SOLC_VERSION" ]]; then
	npm install --no-audit --no-fund --no-save --prefix .solc "solc@$SOLC_VERSION"
fi

mkdir -p build
# solc-js's standard JSON interface: its command line (solcjs) can set
# neither the EVM version nor the metadata hash.
node - "$EVM_VERSION" "${CONTRACTS[@]}" <<'JS'
const fs = require("fs");
const solc = require("./.solc/node_modules/solc");
const [evm, ...names] = process.argv.slice(2);
const sources = {};
for (const n of names) sources[n + ".sol"] = { content: fs.readFileSync(n + ".sol", "utf8") };
const input = {
  language: "Solidity",
  sources,
  settings: {
    evmVersion: evm,
    optimizer: { enabled: true, runs: 200 },
    metadata: { bytecodeHash: "none" },
    outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
  },
};
const out = JSON.parse(solc.compile(JSON.stringify(input)));
let failed = false;
for (const e of out.errors || []) {
  process.stderr.write(e.formattedMessage || e.message);
  if (e.severity === "error") failed = true;
}
if (failed) process.exit(1);
console.log("solc " + solc.version() + ", evm " + evm + ", optimizer on");
for (const n of names) {
  const c = out.contracts[n + ".sol"][n];
  fs.writeFileSync("build/" + n + ".abi", JSON.stringify(c.abi, null, 1) + "\n");
  fs.writeFileSync("build/" + n + ".bin", c.evm.bytecode.object + "\n");
  console.log("build/" + n + ".bin: " + c.evm.bytecode.object.length / 2 + " bytes");
}
JS
