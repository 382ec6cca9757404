/**
 * Vision models are routed like text models: the router knows their bundle from the built-in
 * catalog, so with every pool empty they answer 202 for the right bundle, never 404.
 */
import assert from "node:assert/strict";
import { getJson, startTestRouter } from "../helpers/router.ts";

const CASES = [
  { path: "encode", model: "Xenova/clip-vit-base-patch32", bundle: "default" },
  { path: "extract", model: "Xenova/detr-resnet-50", bundle: "extract" },
  { path: "extract", model: "Xenova/yolos-tiny", bundle: "extract" },
  { path: "extract", model: "Xenova/owlvit-base-patch32", bundle: "extract" },
  { path: "extract", model: "Xenova/owlv2-base-patch16-ensemble", bundle: "extract" },
];

Deno.test("routing: CLIP and detection models with no worker → 202 for their catalog bundle", async () => {
  const r = await startTestRouter({ SVC_MACHINE_PROFILES: "l4" });
  try {
    for (const c of CASES) {
      const res = await getJson(`${r.url}/v1/${c.path}/${encodeURIComponent(c.model)}`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-svc-machine-profile": "l4" },
        body: "{}",
      });
      assert.equal(res.status, 202, `${c.model}: ${JSON.stringify(res.body)}`);
      assert.equal(res.body.bundle, c.bundle, c.model);
      assert.equal(res.body.machine_profile, "l4");
    }
  } finally {
    await r.close();
  }
});
