/** CPU time as the bench reads it from /proc, of a real child process. */
import assert from "node:assert/strict";
import { cpuMs } from "../../bench/cpu_time.ts";

Deno.test({
  name: "cpu time: a child's busy main thread shows up in its main thread's and process's CPU",
  ignore: Deno.build.os !== "linux",
  async fn() {
    // The child spins until its own main thread has used 200 ms of CPU (read from
    // /proc/thread-self, which `deno eval` may read), however long a crowded machine makes that.
    // `deno run`/`eval` run the module on the process's main thread, as the worker and router do.
    const busy = "const cpu = () => { const s = Deno.readTextFileSync('/proc/thread-self/stat'); " +
      "const f = s.slice(s.lastIndexOf(')') + 2).split(' '); return (+f[11] + +f[12]) * 10; }; " +
      "let x = 0; while (cpu() < 200) for (let i = 0; i < 1e5; i++) x += Math.sqrt(i); " +
      "console.log('done', x > 0); setTimeout(() => {}, 30000);";
    const child = new Deno.Command(Deno.execPath(), {
      args: ["eval", busy],
      stdout: "piped",
      stderr: "null",
    }).spawn();
    try {
      const reader = child.stdout.getReader();
      const first = await reader.read();
      assert.match(new TextDecoder().decode(first.value), /done true/);
      reader.releaseLock();
      const main = cpuMs(child.pid, true);
      const all = cpuMs(child.pid, false);
      assert.ok(main !== null && main >= 200, `main thread CPU ${main} ms`);
      assert.ok(all !== null && all >= main, `process CPU ${all} ms, main thread ${main} ms`);
    } finally {
      child.kill();
      await child.status;
      await child.stdout.cancel().catch(() => {});
    }
  },
});
