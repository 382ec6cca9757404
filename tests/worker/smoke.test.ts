import assert from "node:assert/strict";
import { postJson, startTestWorker } from "./harness.ts";

Deno.test("smoke: dense encode", async () => {
  const w = await startTestWorker();
  try {
    const r = await postJson(`${w.url}/v1/encode/fixture/dense`, {
      items: [{ id: "a", text: "hello world" }, { text: "the cat sat on the mat" }],
    });
    console.log(r.status, JSON.stringify(r.body).slice(0, 400), [...r.headers.entries()]);
    assert.equal(r.status, 200);
  } finally {
    await w.close();
  }
});
