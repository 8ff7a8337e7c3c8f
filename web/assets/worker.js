// The page's worker: the same wasm, reading the stream. The page's
// first message (where the stream is, its clock) may come while the
// wasm is still loading: it is kept, and handed over.
import init, { start_worker } from "./typhon_live_web.js";

const start = new Promise((resolve) => {
    self.onmessage = (event) => resolve(event.data);
});
await init({ module_or_path: new URL("./typhon_live_web_bg.wasm", import.meta.url) });
start_worker(await start);
