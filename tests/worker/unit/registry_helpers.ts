/** Shared setup of registry.test.ts and registry_entries.test.ts. */
import assert from "node:assert/strict";
import { parseModelConfig } from "@svc/shared/catalog/schema";
import type { ModelConfig } from "@svc/shared/catalog/schema";
import { ServiceError } from "@svc/shared/errors";
import { ModelRegistry, type RegistryOptions } from "#worker/registry/registry.ts";
import { ServedCatalog } from "#worker/catalog/served.ts";
import type { DeferredEntry } from "#worker/catalog/deferred.ts";
import { FakeBackend } from "../fake_backend.ts";
import type { WeightStore } from "#worker/weights/types.ts";
import type { BatchStats } from "#worker/scheduler/batcher.ts";
import type { WorkParams } from "#worker/families/types.ts";
/** Let every pending promise callback run (a timer fires only after the microtask queue). */
export const settle = () => new Promise<void>((r) => setTimeout(r, 0));

export const ENCODE: WorkParams = { op: "encode" };

/** A weights store that answers paths at once, or fails for chosen repositories. */
export class FakeWeights implements WeightStore {
  readonly calls: { repo: string; files: Record<string, string> }[] = [];
  readonly failures = new Map<string, unknown>();
  /** What the caches hold per repository (a test changes it to "replace a file"). */
  readonly stamps = new Map<string, string>();
  /** Repositories whose cache cannot be read. */
  readonly unreadable = new Set<string>();
  stampReads = 0;

  cacheStamp(repo: string, _revision: string, files: Record<string, string>) {
    this.stampReads++;
    if (this.unreadable.has(repo)) return Promise.reject(new Error("permission denied"));
    return Promise.resolve(`${Object.values(files).sort()}:${this.stamps.get(repo) ?? "v0"}`);
  }

  ensureFiles(repo: string, _revision: string, files: Record<string, string>) {
    this.calls.push({ repo, files });
    if (this.failures.has(repo)) return Promise.reject(this.failures.get(repo));
    const paths = Object.entries(files).map(([role, path]) => [role, `/fake/${repo}/${path}`]);
    return Promise.resolve(Object.fromEntries(paths));
  }
}

export function model(id: string, extra: Record<string, unknown> = {}): ModelConfig {
  return parseModelConfig({
    id,
    family: "dense",
    hub: { repo: id, revision: "main" },
    files: { model: "onnx/model.onnx", model_data: "onnx/model.onnx_data", tokenizer: "t.json" },
    inputs: ["text"],
    outputs: ["dense"],
    max_sequence_length: 128,
    ...extra,
  }, id);
}

export const CATALOG = new Map(
  [
    model("org/a", {
      profiles: {
        default: { is_default: true, output_types: ["dense"] },
        small: {
          is_default: false,
          output_types: ["dense"],
          options: { model_file: "onnx/model_int8.onnx" },
        },
      },
    }),
    model("org/b"),
    model("org/c"),
  ].map((c) => [c.id, c]),
);

/** The failure cool-down of the test registries. */
export const COOLDOWN_MS = 5_000;

/** Options of {@link setup}: registry settings, and what the served catalog is built from. */
export type SetupOptions = Partial<Omit<RegistryOptions, "catalog">> & {
  device?: "cpu" | "cuda";
  entries?: Map<string, ModelConfig>;
  deferred?: DeferredEntry[];
};

/**
 * A registry (and its served catalog) over fakes; `mem.usedPercent` and `clock.now` are the
 * test's to move.
 */
export function setup(opts: SetupOptions = {}) {
  const { entries = CATALOG, deferred, ...registryOpts } = opts;
  const backend = new FakeBackend(opts.device);
  const weights = new FakeWeights();
  const events: { event: string; fields: Record<string, unknown> }[] = [];
  const batches: BatchStats[] = [];
  const mem = { usedPercent: 10 };
  const clock = { now: 1_000 };
  const catalog = new ServedCatalog({
    entries,
    device: backend.device,
    deferred,
    failureCooldownMs: COOLDOWN_MS,
    now: () => clock.now,
    onEvent: (event, fields) => events.push({ event, fields }),
  });
  const registry = new ModelRegistry({
    catalog,
    weights,
    backend,
    maxBatchRequests: 8,
    maxBatchItems: 8,
    maxWaitMs: 0,
    maxQueueItems: 100,
    maxLoadedModels: 8,
    loadFailureCooldownMs: COOLDOWN_MS,
    maxRunTokens: 0,
    memoryThresholdPercent: 90,
    memoryProbe: () => ({
      usedPercent: mem.usedPercent,
      usedBytes: mem.usedPercent,
      totalBytes: 100,
    }),
    onEvent: (event, fields) => events.push({ event, fields }),
    onBatch: (_model, s) => batches.push(s),
    now: () => clock.now,
    ...registryOpts,
  });
  const count = (event: string, id: string) =>
    events.filter((e) => e.event === event && e.fields.model === id).length;
  const state = (id: string) => registry.status(id)?.state;
  const acquire = (name: string, waitMs = 10_000) =>
    registry.acquire(catalog.resolve(name), waitMs);
  return {
    catalog,
    registry,
    backend,
    weights,
    events,
    batches,
    mem,
    clock,
    count,
    state,
    acquire,
  };
}

/** Assert that `p` rejects with a ServiceError of `code` whose message matches `message`. */
export async function rejectsWith(
  p: Promise<unknown>,
  code: string,
  message: RegExp,
): Promise<ServiceError> {
  const err = await p.then(() => assert.fail("expected a rejection"), (e) => e);
  assert.ok(err instanceof ServiceError, String(err));
  assert.equal(err.code, code);
  assert.match(err.message, message);
  return err;
}
