/** CPU time per request as the bench reads it from /proc: no such process, null readings. */
import assert from "node:assert/strict";
import { cpuMs, usPerRequest } from "./cpu_time.ts";

Deno.test("cpu time: no such process reads null, and null readings give no figure", () => {
  assert.equal(cpuMs(2 ** 30, false), null);
  assert.equal(usPerRequest(null, 10, 5), null);
  assert.equal(usPerRequest(10, 40, 0), null);
  assert.equal(usPerRequest(10, 40, 150), 200);
});
