/** Worker process entry point: `deno task worker`. */
import { ConfigError } from "@svc/shared/config";
import { exitOnListenFailure } from "@svc/shared/http/listen_error";
import { createWorker } from "./bootstrap.ts";
import { runWorkerProcess } from "./server/lifecycle.ts";

if (import.meta.main) {
  let worker;
  try {
    worker = await createWorker(Deno.env.toObject());
  } catch (err) {
    // Configuration errors name every bad variable; print and stop with a clear exit code.
    const what = err instanceof ConfigError ? "invalid configuration: " : "";
    console.error(`worker failed to start: ${what}${(err as Error).message}`);
    Deno.exit(2);
  }
  try {
    await runWorkerProcess(worker);
  } catch (err) {
    exitOnListenFailure(err, { what: "worker", ...worker.settings.listen });
  }
}
