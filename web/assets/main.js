// Starts the viewer (wasm-bindgen's glue runs its start function), and
// gives tests the page's state: window.typhon.summary() is JSON.
import init, { summary } from "./typhon_live_web.js";

await init({ module_or_path: new URL("./typhon_live_web_bg.wasm", import.meta.url) });
window.typhon = { summary: () => JSON.parse(summary()) };
