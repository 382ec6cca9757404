/** `deno task gpu:setup`: what it makes of the install script's output. */
import assert from "node:assert/strict";
import { installFailure } from "#infra/gpu_setup.ts";

Deno.test("gpu:setup: the install script's stack trace becomes its error line", () => {
  const stderr = `node:internal/process/promises:391
    triggerUncaughtException(err, true /* fromPromise */);
    ^

Error: getaddrinfo ENOTFOUND api.nuget.org
    at GetAddrInfoReqWrap.onlookupall [as oncomplete] (node:dns:122:26) {
  errno: -3008,
}`;
  assert.equal(installFailure(stderr), "Error: getaddrinfo ENOTFOUND api.nuget.org");
  assert.equal(installFailure(""), "no output");
});
