/** Worker process entry point: `deno task worker`. */
import { createWorker } from "./bootstrap.ts";
import { runWorkerProcess } from "./server/lifecycle.ts";

if (import.meta.main) {
  const env = Deno.env.toObject();
  let worker;
  try {
    worker = await createWorker(env);
  } catch (err) {
    // Configuration errors name the variable; print and stop with a clear exit code.
    console.error(`worker failed to start: ${(err as Error).message}`);
    Deno.exit(2);
  }
  await runWorkerProcess(worker, env);
}
