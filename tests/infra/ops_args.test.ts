/** The ops tasks' router URL: a worker's list of router instances names several; any answers. */
import assert from "node:assert/strict";
import { parseOpsArgs } from "#infra/ops/cli.ts";

Deno.test("ops args: the first of a worker's SVC_ROUTER_URL list, --url first", () => {
  const env = { SVC_ROUTER_URL: " , wss://r1.example/ ,https://r2.example" };
  assert.equal(parseOpsArgs([], env).url, "https://r1.example");
  assert.equal(parseOpsArgs(["--url", "http://x:1/"], env).url, "http://x:1");
  assert.equal(parseOpsArgs([], { SVC_ROUTER_URL: "", SVC_PORT: "9" }).url, "http://127.0.0.1:9");
});
