/**
 * Issue 26.7: LoRA adapters on disk. Any client may name any public adapter, so the adapters'
 * files in SVC_CACHE_DIR are held to SVC_LORA_DISK_BYTES (least recently used deleted first, an
 * earlier process's adapters counted too), and SVC_LORA_ALLOW restricts which repositories or
 * owners may be named at all. Real weight store, an http cluster cache on 127.0.0.1 (so files
 * land in the local cache), the adapter runner scripted as in store.test.ts.
 */
import assert from "node:assert/strict";
import { ServiceError } from "@svc/shared/errors";
import { createWeightStore } from "#worker/weights/store.ts";
import { createHttpClusterCache } from "#worker/weights/cluster_cache.ts";
import { LORA_FILES, type LoraStarter, LoraStore } from "#worker/lora/store.ts";
import { LoraDiskBudget } from "#worker/lora/disk_budget.ts";
import { loraAllowList } from "#worker/lora/allow.ts";
import { DENSE_QV_SPEC, denseAdapter, writeAdapter } from "@svc/fixture-models/lora";
import { dense } from "@svc/fixture-models/models";
import type { EncoderWeights } from "@svc/fixture-models/models";

const W = dense.weights() as EncoderWeights;
const ids = (n: number) => Array.from({ length: n }, (_, i) => `churn/adapter-${i}`);

/** Starts that always succeed (the serving tests run the real adapter thread). */
const start: LoraStarter = () =>
  Promise.resolve({
    runner: {
      run: () => Promise.reject(new Error("not run here")),
      dispose: () => Promise.resolve(),
    },
    loaded: { memoryBytes: 1000, patched: 6, planMs: 1, mergeMs: 1, sessionMs: 1 },
  });

/** Bytes of every regular file under `dir`. */
async function bytesUnder(dir: string): Promise<number> {
  let total = 0;
  try {
    for await (const e of Deno.readDir(dir)) {
      const p = `${dir}/${e.name}`;
      if (e.isDirectory) total += await bytesUnder(p);
      else if (e.isFile) total += (await Deno.stat(p)).size;
    }
  } catch {
    // absent
  }
  return total;
}

async function withLoraRepos(
  count: number,
  fn: (o: { origin: string; local: string; hits: string[]; loraBytes: number }) => Promise<void>,
): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "svc-lora-disk-" });
  const origin = `${root}/origin`;
  for (const repo of ids(count)) {
    await writeAdapter(origin, denseAdapter(W, { ...DENSE_QV_SPEC, repo }));
  }
  const hits: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const path = decodeURIComponent(new URL(req.url).pathname);
    hits.push(path);
    try {
      return new Response(await Deno.readFile(`${origin}${path}`));
    } catch {
      return new Response("not found", { status: 404 });
    }
  });
  try {
    const loraBytes = await bytesUnder(`${origin}/${ids(1)[0]}`);
    await fn({
      origin: `http://127.0.0.1:${server.addr.port}`,
      local: `${root}/local`,
      hits,
      loraBytes,
    });
  } finally {
    await server.shutdown();
    await Deno.remove(root, { recursive: true });
  }
}

function storeOf(
  origin: string,
  local: string,
  o: { disk?: LoraDiskBudget; allowed?: (id: string) => boolean; maxLoaded?: number },
) {
  const weights = createWeightStore({
    cacheDir: local,
    sources: [createHttpClusterCache({ location: origin })],
  });
  return {
    weights,
    store: new LoraStore({
      model: { id: "fixture/dense", repo: "fixture/dense" },
      weights,
      start,
      maxLoaded: o.maxLoaded ?? 4,
      maxLoraBytes: 1024 * 1024,
      failureCooldownMs: 30_000,
      allowed: o.allowed,
      disk: o.disk,
    }),
  };
}

Deno.test("lora disk budget: twenty adapters churned through a budget of three stay within it", async () => {
  await withLoraRepos(20, async ({ origin, local, loraBytes }) => {
    const maxBytes = Math.floor(3.5 * loraBytes);
    const weights = createWeightStore({
      cacheDir: local,
      sources: [createHttpClusterCache({ location: origin })],
    });
    // An earlier process left two adapters in the cache: they count, and go first.
    for (const id of ids(20).slice(18)) {
      await weights.ensureFiles(id, "main", { ...LORA_FILES });
    }
    const old = new Date(Date.now() - 3_600_000);
    for (const id of ids(20).slice(18)) {
      for (const f of Object.values(LORA_FILES)) {
        await Deno.utime(`${local}/${id}/@main/${f}`, old, old);
      }
    }
    const events: string[] = [];
    const disk = new LoraDiskBudget({
      maxBytes,
      weights,
      files: { ...LORA_FILES },
      marker: LORA_FILES.weights,
      onEvent: (_e, f) => events.push(String(f.lora)),
    });
    const { store } = storeOf(origin, local, { disk, maxLoaded: 2 });
    let peak = 0;
    for (const id of ids(18)) {
      (await store.acquire(id, 10_000))();
      const used = await bytesUnder(local);
      peak = Math.max(peak, used);
      assert.ok(used <= maxBytes, `${used} bytes on disk after ${id}, budget ${maxBytes}`);
    }
    assert.ok(peak > 2 * loraBytes, "the budget was used, not avoided");
    assert.deepEqual(
      events.slice(0, 2).sort(),
      ids(20).slice(18),
      "the earlier process's go first",
    );
    assert.deepEqual(disk.ids, ids(18).slice(-3).reverse(), "the three most recent stay");
    assert.equal(disk.usedBytes, await bytesUnder(local));
    const folders = [];
    for await (const e of Deno.readDir(`${local}/churn`)) folders.push(e.name);
    assert.deepEqual(folders.sort(), ids(18).slice(-3).map((id) => id.split("/")[1]).sort());
    // An adapter whose files were deleted loads again (fetched again) when asked.
    (await store.acquire(ids(18)[0], 10_000))();
    assert.ok(disk.ids.includes(ids(18)[0]));
    assert.ok((await bytesUnder(local)) <= maxBytes);
    await store.close();
  });
});

Deno.test("lora disk budget: SVC_LORA_ALLOW refuses other repositories before any download", async () => {
  await withLoraRepos(3, async ({ origin, local, hits }) => {
    const allowed = loraAllowList(["churn/adapter-0", "trusted"])!;
    assert.ok(allowed("CHURN/Adapter-0") && allowed("trusted/anything"));
    assert.ok(!allowed("churn/adapter-1") && !allowed("trustedx/a"));
    const { store } = storeOf(origin, local, { allowed });
    (await store.acquire("churn/adapter-0", 10_000))();
    const before = hits.length;
    await assert.rejects(store.acquire("churn/adapter-1", 10_000), (err) => {
      assert.ok(err instanceof ServiceError);
      assert.equal(err.code, "INVALID_INPUT");
      assert.match(err.message, /SVC_LORA_ALLOW/);
      return true;
    });
    assert.equal(hits.length, before, "nothing was fetched for it");
    await store.close();
  });
});
