/** The launcher watch of `deno task start` reads the real process table through `ps`. */
import assert from "node:assert/strict";
import { type ProcRow, psTable } from "#infra/launcher_watch.ts";

Deno.test("launcher watch: the real ps finds this process's parent", async () => {
  let rows: ProcRow[];
  try {
    rows = await psTable();
  } catch (err) {
    console.log(`skipped: ps cannot run here (${(err as Error).message})`);
    return;
  }
  const self = rows.find((r) => r.pid === Deno.pid);
  assert.ok(self, "this process is in the table");
  assert.equal(self.ppid, Deno.ppid);
  const some = await psTable([Deno.pid, 999_999_999]);
  assert.deepEqual(some.map((r) => r.pid), [Deno.pid]);
});
