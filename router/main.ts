/**
 * Router entry point (`deno task router`): network and environment access only, so the same
 * code runs on Deno Deploy. Configuration comes from SVC_* variables (see router/settings.ts).
 */
import { exitOnListenFailure } from "@svc/shared/http/listen_error";
import { loadRouterSettings } from "./settings.ts";
import { startRouter } from "./server.ts";

/** Parse the environment, start the router, and stop it cleanly on SIGINT/SIGTERM. */
export async function main(): Promise<void> {
  let settings;
  try {
    settings = loadRouterSettings(Deno.env.toObject());
  } catch (err) {
    console.error(`router: invalid configuration: ${(err as Error).message}`);
    Deno.exit(2);
  }
  let router;
  try {
    router = await startRouter(settings);
  } catch (err) {
    exitOnListenFailure(err, { what: "router", ...settings.listen });
  }
  let stopping = false;
  const stop = () => {
    if (stopping) Deno.exit(1); // a second signal: leave at once
    stopping = true;
    // Bounded: a stuck close must not keep the process alive.
    const timer = setTimeout(() => Deno.exit(1), 5000);
    router.close().finally(() => {
      clearTimeout(timer);
      Deno.exit(0);
    });
  };
  // Deno Deploy delivers no signals; listening is only possible (and useful) locally.
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    try {
      Deno.addSignalListener(sig, stop);
    } catch {
      // Platform without signal support.
    }
  }
  await router.finished;
}

if (import.meta.main) await main();
