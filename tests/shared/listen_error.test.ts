/** Listen failures become one line naming the port or address and the setting. */
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { listenFailureLine } from "@svc/shared/http/listen_error";

Deno.test("listen errors: Deno.serve and node:http's port in use read the same", async () => {
  const holder = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (holder.addr as Deno.NetAddr).port;
  const target = { what: "worker", host: "127.0.0.1", port };
  try {
    let denoErr: unknown;
    try {
      Deno.serve({ hostname: "127.0.0.1", port, onListen() {} }, () => new Response());
    } catch (e) {
      denoErr = e;
    }
    const server = createServer();
    const nodeErr = await new Promise<unknown>((resolve) => {
      server.once("error", resolve);
      server.listen(port, "127.0.0.1", () => resolve(undefined));
    });
    server.close();
    const want = `worker: port ${port} is already in use (SVC_PORT); stop what holds it or ` +
      "choose another port, e.g. SVC_PORT=8080";
    assert.equal(listenFailureLine(denoErr, target), want);
    assert.equal(listenFailureLine(nodeErr, target), want);
  } finally {
    holder.close();
  }
  const other = { ...target, port: 8080, portSetting: "SVC_WORKER_PORT" };
  assert.match(
    listenFailureLine(Object.assign(new Error("x"), { code: "EADDRINUSE" }), other)!,
    /port 8080 .*\(SVC_WORKER_PORT\).*SVC_WORKER_PORT=8081$/,
  );
  assert.match(
    listenFailureLine(Object.assign(new Error("x"), { code: "EADDRNOTAVAIL" }), target)!,
    /cannot listen on 127\.0\.0\.1 \(SVC_HOST\)/,
  );
  assert.equal(listenFailureLine(new Error("something else"), target), undefined);
});
