/**
 * The bench's floors, each in a process of its own: the bare model server answers an encode body
 * with a vector and its timings, and the bare proxy passes them on.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { decodeMsgpackResponse } from "../../helpers/msgpack_response.ts";
import { benchSmall } from "@svc/fixture-models/models";
import { MODEL_PATH } from "@svc/fixture-models/models";
import { fileBytes } from "../../fixtures/testing.ts";
import { startFloor } from "../../bench/floor/start.ts";
import { encodeBody } from "../../bench/load_core.ts";

Deno.test("bench floors: the bare server answers a vector with its timings; the bare proxy passes them on", async () => {
  const dir = await Deno.makeTempDir({ prefix: "svc-floor-" });
  try {
    const model = benchSmall(1);
    const modelPath = join(dir, "model.onnx");
    await Deno.writeFile(modelPath, fileBytes(model.files(model.weights()), MODEL_PATH));
    await floorsAnswer(modelPath);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Start both floors on `modelPath` and check one answer of each. */
async function floorsAnswer(modelPath: string): Promise<void> {
  const server = await startFloor({ mode: "model", modelPath, threads: 1, ids: [101, 2023, 102] });
  try {
    const proxy = await startFloor({ mode: "proxy", upstream: server.url });
    try {
      for (const base of [server.url, proxy.url]) {
        const res = await fetch(`${base}/v1/encode/fixture%2Fbench-small`, {
          method: "POST",
          headers: { "content-type": "application/msgpack" },
          body: encodeBody(["any text: the floor runs its fixed ids"]),
        });
        assert.equal(res.status, 200, base);
        assert.equal(res.headers.get("content-type"), "application/msgpack");
        const inference = Number(res.headers.get("x-inference-time"));
        const total = Number(res.headers.get("x-total-time"));
        assert.ok(inference > 0 && total >= inference, `${inference} / ${total}`);
        const body = decodeMsgpackResponse(new Uint8Array(await res.arrayBuffer())) as {
          items: { dense: number[] }[];
        };
        assert.equal(body.items[0].dense.length, 384);
        assert.ok(body.items[0].dense.every(Number.isFinite));
      }
    } finally {
      await proxy.proc.kill();
    }
  } finally {
    await server.proc.kill();
  }
}
