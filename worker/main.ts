/** Worker process entry point: `deno task worker`. */
import { ConfigError } from "@svc/shared/config";
import { exitOnListenFailure } from "@svc/shared/http/listen_error";
import { COMMON_FIELDS, processHelp, serverArgs } from "@svc/shared/config";
import { createWorker } from "./bootstrap.ts";
import { runWorkerProcess } from "./server/lifecycle.ts";
import { WORKER_REFERENCE } from "./config/settings.ts";

/** `deno task worker --help`. */
export function workerHelp(): string {
  return processHelp({
    usage: "usage: [SVC_*=value ...] npx deno task worker",
    about: "One inference worker: serves the API on SVC_PORT; with SVC_ROUTER_URL and\n" +
      "SVC_WORKER_TOKEN it dials the router and joins its fleet. GPU set-up: docs/gpu.md.",
    sections: [{ id: "router and worker", fields: COMMON_FIELDS }, ...WORKER_REFERENCE],
  });
}

if (import.meta.main) {
  const asked = serverArgs(Deno.args, workerHelp, "deno task worker");
  if (asked) {
    (asked.code === 0 ? console.log : console.error)(asked.out);
    Deno.exit(asked.code);
  }
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
