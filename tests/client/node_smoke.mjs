/**
 * Run under Node by tests/e2e/client/live.test.ts: the client bundled for browsers (no Deno or Node
 * built-ins inside) calls a live router, and what came back is printed as one JSON line.
 * Usage: node node_smoke.mjs <bundle.mjs> <router url> <api key>
 */
import process from "node:process";
import { pathToFileURL } from "node:url";

const [bundle, baseUrl, apiKey] = process.argv.slice(2);
const { SvcClient, SvcError } = await import(pathToFileURL(bundle).href);

const warnings = [];
const client = new SvcClient({
  baseUrl,
  apiKey,
  machineProfile: "cpu",
  onWarning: (m) => warnings.push(m),
});
const encoded = await client.encode("fixture/dense", ["hello world"], { output_dtype: "int8" });
const sparse = await client.encode("fixture/sparse", ["hello world"], {
  output_types: ["sparse"],
});
const scored = await client.score("fixture/reranker", "where do cats sleep", [
  { id: "a", text: "cats sleep on the warm mat" },
  { id: "b", text: "stock prices" },
]);
const models = await client.listModels();
let notFound = null;
try {
  await client.getModel("fixture/none");
} catch (err) {
  notFound = { isSvcError: err instanceof SvcError, code: err.code, status: err.status };
}
const noKey = await new SvcClient({ baseUrl }).listModels().then(
  () => null,
  (err) => ({ code: err.code, status: err.status }),
);

const dense = encoded.items[0].dense;
console.log(JSON.stringify({
  node: process.versions.node,
  dense: { type: dense.values.constructor.name, length: dense.values.length, dims: dense.dims },
  denseValues: Array.from(dense.values),
  sparseIndices: sparse.items[0].sparse.indices.constructor.name,
  scores: scored.scores.map((s) => s.item_id),
  models: models.length,
  notFound,
  noKey,
  warnings,
  serverVersion: client.serverVersion,
}));
