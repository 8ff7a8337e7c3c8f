// Starts the viewer on the page's main thread (it starts its worker,
// worker.js), and gives tests the page's state:
// window.typhon.summary() is JSON.
import init, { start_page, summary } from "./typhon_live_web.js";

await init({ module_or_path: new URL("./typhon_live_web_bg.wasm", import.meta.url) });
start_page();
window.typhon = { summary: () => JSON.parse(summary()) };
