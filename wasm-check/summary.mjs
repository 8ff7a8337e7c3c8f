// node summary.mjs PKG_DIR FILE: the summary of a trace, by the reader and
// the view model compiled to WebAssembly (wasm-bindgen --target nodejs
// output in PKG_DIR).
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { resolve } from "node:path";

const [pkg, file] = process.argv.slice(2);
if (!pkg || !file) {
    console.error("usage: node summary.mjs PKG_DIR FILE");
    process.exit(2);
}
const require = createRequire(import.meta.url);
const check = require(resolve(pkg, "typhon_live_wasm_check.js"));
console.log(check.summary(readFileSync(file)));
