/**
 * The load-generator process: reads one JSON `LoadJob` per stdin line, answers one JSON
 * `LoadResult` per stdout line, exits at end of input. A separate process so that sending load
 * never shares an event loop with the bench's probes or its in-process baseline session.
 */
import { runLoad } from "./load_core.ts";
import type { LoadJob } from "./load_types.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
let buffered = "";
for await (const chunk of Deno.stdin.readable) {
  buffered += decoder.decode(chunk, { stream: true });
  let nl: number;
  while ((nl = buffered.indexOf("\n")) >= 0) {
    const line = buffered.slice(0, nl);
    buffered = buffered.slice(nl + 1);
    if (line.trim() === "") continue;
    const result = await runLoad(JSON.parse(line) as LoadJob);
    await Deno.stdout.write(encoder.encode(JSON.stringify(result) + "\n"));
  }
}
