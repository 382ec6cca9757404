import assert from "node:assert/strict";
import { pack } from "msgpackr/pack";
import { getModel } from "#router/models.ts";
import { getJson, startTestRouter, TEST_TOKEN } from "../helpers/router.ts";
import { startFakeWorker } from "../helpers/fake_worker.ts";
import { waitFor } from "../../helpers/wait.ts";

const quiet = () => {};

Deno.test("models: id:profile is described like its id with the profile's dims, from the catalog, without workers", async () => {
  const name = "nomic-ai/nomic-embed-text-v1.5:matryoshka-256";
  const info = await getModel([], name, quiet);
  assert.ok(info, "a non-default profile is a served name");
  assert.equal(info.name, name);
  assert.equal(info.bundle, "default");
  assert.equal(info.loaded, false);
  assert.deepEqual(info.dims, { dense: 256 }, "the profile's Matryoshka size");
  const plain = await getModel([], "nomic-ai/nomic-embed-text-v1.5", quiet);
  assert.deepEqual(plain?.dims, { dense: 768 });
  const quantized = await getModel([], "nomic-ai/nomic-embed-text-v1.5:quantized", quiet);
  assert.deepEqual(quantized?.dims, { dense: 768 }, "a profile without dimensions keeps them");
  assert.equal(
    await getModel([], "nomic-ai/nomic-embed-text-v1.5:no-such-profile", quiet),
    undefined,
  );
});

Deno.test("models: GET /v1/models/{id:profile} answers 200 on the router", async () => {
  const r = await startTestRouter({});
  try {
    const res = await getJson(
      `${r.url}/v1/models/nomic-ai%2Fnomic-embed-text-v1.5%3Amatryoshka-256`,
    );
    assert.equal(res.status, 200);
    assert.equal(res.body.name, "nomic-ai/nomic-embed-text-v1.5:matryoshka-256");
  } finally {
    await r.close();
  }
});

Deno.test("models: an unknown profile of a known model is a 400 on the router, an unknown model 404", async () => {
  const r = await startTestRouter({});
  const w = startFakeWorker({
    routerUrl: r.url,
    token: TEST_TOKEN,
    id: "w1",
    profile: "cpu",
    models: [{ name: "fixture/dense" }],
  });
  try {
    await waitFor(() => w.link.connected, "registered");
    const builtin = await getJson(`${r.url}/v1/models/nomic-ai%2Fnomic-embed-text-v1.5%3Atiny`);
    assert.equal(builtin.status, 400);
    assert.equal(builtin.body.detail.code, "INVALID_INPUT");
    assert.match(
      builtin.body.detail.message,
      /has no profile "tiny" \(its profiles: .*matryoshka-256/,
    );
    const served = await getJson(`${r.url}/v1/models/fixture%2Fdense%3Atiny`);
    assert.equal(served.status, 400);
    assert.match(served.body.detail.message, /model "fixture\/dense" has no profile "tiny"/);
    const unknown = await getJson(`${r.url}/v1/models/nope%2Fnothing%3Atiny`);
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.detail.code, "MODEL_NOT_FOUND");
  } finally {
    await w.close();
    await r.close();
  }
});

Deno.test("embeddings: the router reads the model from JSON or msgpack, with the input limits", async () => {
  const r = await startTestRouter({ SVC_DEFAULT_MACHINE_PROFILE: "cpu" });
  try {
    const post = (body: BodyInit, type: string) =>
      getJson(`${r.url}/v1/embeddings`, {
        method: "POST",
        headers: { "content-type": type },
        body,
      });
    const unknownPacked = await post(
      new Uint8Array(pack({ model: "x/../y", input: "a" })),
      "application/msgpack",
    );
    // A name that cannot be a model id is a 404 at once (a well-formed unknown one would wait
    // for the empty pool).
    assert.equal(unknownPacked.status, 404, "msgpack body understood");
    const long = await post(
      JSON.stringify({ model: "m".repeat(5000), input: "a" }),
      "application/json",
    );
    assert.equal(long.status, 400);
    assert.ok(long.body.detail.message.length < 300, "the long name is not echoed back");
    const deep = await post("[".repeat(5000) + "]".repeat(5000), "application/json");
    assert.equal(deep.status, 400);
    assert.match(deep.body.detail.message, /nesting/);
  } finally {
    await r.close();
  }
});
