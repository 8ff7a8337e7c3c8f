// node ingest.mjs PKG_DIR FILE ROUNDS: the trace read into a model ROUNDS
// times by the reader and the view model compiled to WebAssembly
// (wasm-bindgen --target nodejs output in PKG_DIR); prints the median
// rate, events a second.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { performance } from "node:perf_hooks";

const [pkg, file, rounds] = process.argv.slice(2);
if (!pkg || !file || !(Number(rounds) > 0)) {
    console.error("usage: node ingest.mjs PKG_DIR FILE ROUNDS");
    process.exit(2);
}
const require = createRequire(import.meta.url);
const check = require(resolve(pkg, "typhon_live_wasm_check.js"));
const trace = readFileSync(file);
const rates = [];
for (let i = 0; i < Number(rounds); i++) {
    const began = performance.now();
    const events = check.ingest(trace);
    rates.push(events / ((performance.now() - began) / 1e3));
}
rates.sort((a, b) => a - b);
console.log(Math.round(rates[Math.floor(rates.length / 2)]));
