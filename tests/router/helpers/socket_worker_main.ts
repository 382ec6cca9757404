/**
 * A socket worker (socket_worker.ts) as a process of its own, so that neither a test's load nor
 * its death touches the test process: it registers with the router in `SVC_ROUTER_URL` (token
 * `SVC_WORKER_TOKEN`, id `SVC_WORKER_ID`, pool `cpu`) serving fixture/dense, answers model
 * requests with the length and byte sum of their bodies, and exits at once after receiving one
 * whose trace id is `poison` (the way a worker killed by what a request asked for dies);
 * `SVC_WORKER_TRANSPORT=connection` takes them over its fleet connection instead of HTTP. Needs
 * network and environment permissions only.
 */
import { startSocketWorker } from "./socket_worker.ts";

const env = (name: string) => {
  const v = Deno.env.get(name);
  if (!v) throw new Error(`${name} is required`);
  return v;
};

await startSocketWorker({
  routerUrl: env("SVC_ROUTER_URL"),
  token: env("SVC_WORKER_TOKEN"),
  id: env("SVC_WORKER_ID"),
  profile: "cpu",
  models: [{ name: "fixture/dense", state: "loaded" }],
  exitOnTraceId: "poison",
  transport: Deno.env.get("SVC_WORKER_TRANSPORT") === "connection" ? "connection" : "http",
});
