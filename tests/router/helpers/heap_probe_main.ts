/**
 * A real router in a child process whose heap the parent can measure exactly: run with
 * `--v8-flags=--expose-gc`; every `heap` line on stdin runs two full collections and answers
 * one JSON line `{heap_used, rss}` on stdout. Settings come from the environment, as for
 * `deno task router`; the first stdout line is `listening <port>`.
 */
import { loadRouterSettings } from "@svc/router/settings";
import { startRouter } from "#router/server.ts";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error("run with --v8-flags=--expose-gc");
const router = await startRouter(loadRouterSettings(Deno.env.toObject()), { log: () => {} });
console.log(`listening ${router.port}`);
const decoder = new TextDecoderStream();
let buffered = "";
for await (const chunk of Deno.stdin.readable.pipeThrough(decoder)) {
  buffered += chunk;
  let nl: number;
  while ((nl = buffered.indexOf("\n")) >= 0) {
    const command = buffered.slice(0, nl).trim();
    buffered = buffered.slice(nl + 1);
    if (command !== "heap") continue;
    // Twice: the first pass may only finalise what the second then frees.
    gc();
    await new Promise((r) => setTimeout(r, 50));
    gc();
    const m = Deno.memoryUsage();
    console.log(JSON.stringify({ heap_used: m.heapUsed, rss: m.rss }));
  }
}
await router.close();
