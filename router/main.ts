/**
 * Router entry point (`deno task router`): network and environment access only, so the same
 * code runs on Deno Deploy. Configuration comes from SVC_* variables (see router/settings.ts).
 */
import { exitOnListenFailure } from "@svc/shared/http/listen_error";
import { COMMON_FIELDS, processHelp, serverArgs } from "@svc/shared/config";
import { loadRouterSettings, ROUTER_REFERENCE } from "./settings.ts";
import { startRouter } from "./server.ts";

/** `deno task router --help`. */
export function routerHelp(): string {
  return processHelp({
    usage: "usage: [SVC_*=value ...] npx deno task router",
    about: "The edge router: clients send it the API, workers dial in to it (SVC_WORKER_TOKEN).\n" +
      "It runs with network and environment access only; the same code runs on Deno Deploy.",
    sections: [{ id: "router and worker", fields: COMMON_FIELDS }, ...ROUTER_REFERENCE],
  });
}

/** Parse the environment, start the router, and stop it cleanly on SIGINT/SIGTERM. */
export async function main(): Promise<void> {
  const asked = serverArgs(Deno.args, routerHelp, "deno task router");
  if (asked) {
    (asked.code === 0 ? console.log : console.error)(asked.out);
    Deno.exit(asked.code);
  }
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
