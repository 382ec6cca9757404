/**
 * `SVC_MODELS` entries as registry entries configured at run time: each reads its repository
 * (a directory in place, or a hub repository through the weight store and the repository lister)
 * and detects its catalog entry from the files (detect/detect.ts), as this worker's device runs it.
 */
import type { ModelConfig } from "@svc/shared/catalog/schema";
import type { DeferredEntry } from "./deferred.ts";
import type { RepoLister } from "../weights/listing.ts";
import { listDirectoryFiles } from "../weights/listing.ts";
import { fileStamp } from "../weights/local_cache.ts";
import type { WeightStore } from "../weights/types.ts";
import { configForDevice } from "./device_files.ts";
import { detectedBundle, detectModel } from "./detect/detect.ts";
import { OVERRIDE_FILE } from "./detect/errors.ts";
import { directoryView, hubView } from "./detect/repo_view.ts";
import type { ModelEntry } from "./model_entries.ts";
import type { ModelJsonBounds } from "../weights/model_json.ts";
import { join } from "node:path";

/** What configuring entries needs from the worker. */
export interface UserModelDeps {
  store: WeightStore;
  lister: RepoLister;
  /** The bundle this worker serves (`all`: each model in its family's bundle). */
  workerBundle: string;
  device: "cpu" | "cuda";
  forceFp32: boolean;
  /** Bounds of the JSON files detection reads. */
  json?: ModelJsonBounds;
  /** `SVC_MODELS_FOLLOW_LINKS`: a directory's files may be links to files outside it. */
  followLinks?: boolean;
}

/** Files whose change may change what a hub repository's detection finds (cache stamps). */
const DETECTION_FILES = [
  "config.json",
  "modules.json",
  "1_Pooling/config.json",
  "sentence_bert_config.json",
  "config_sentence_transformers.json",
  "tokenizer_config.json",
  "onnx/tokenizer_config.json",
  // Its absence is a detection error of its own: its arrival must count as a change.
  "tokenizer.json",
  "onnx/tokenizer.json",
  "gliner_config.json",
  "preprocessor_config.json",
  OVERRIDE_FILE,
  "onnx/model.onnx",
  "model.onnx",
];

/** One SVC_MODELS entry as a registry entry configured from its files. */
export function userModelEntry(entry: ModelEntry, deps: UserModelDeps): DeferredEntry {
  const bundleFor = (family: ModelConfig["family"]) =>
    entry.options.bundle !== undefined
      ? String(entry.options.bundle)
      : detectedBundle(family, deps.workerBundle);
  const asRun = (c: ModelConfig) => configForDevice(c, deps.device, deps.forceFp32);
  const bundle = entry.options.bundle !== undefined
    ? String(entry.options.bundle)
    : deps.workerBundle;
  if (entry.kind === "directory") {
    return {
      id: entry.id,
      bundle,
      source: { kind: "directory" },
      configure: async () =>
        asRun(
          await detectModel({
            id: entry.id,
            view: await directoryView(entry.path, entry.id, {
              json: deps.json,
              followLinks: deps.followLinks,
            }),
            graphsAreLocal: true,
            entryOptions: entry.options,
            source: { kind: "directory" },
            exportFrom: entry.path,
            bundleFor,
          }),
        ),
      stamp: () => directoryStamp(entry.path),
    };
  }
  const { repo, revision } = entry;
  return {
    id: entry.id,
    bundle,
    source: { kind: "hub", repo, revision },
    configure: async () => {
      const view = await hubView({
        modelId: entry.id,
        repo,
        revision,
        store: deps.store,
        lister: deps.lister,
        json: deps.json,
      });
      const config = await detectModel({
        id: entry.id,
        view,
        graphsAreLocal: false,
        entryOptions: entry.options,
        source: { kind: "hub", repo, revision },
        exportFrom: repo,
        bundleFor,
      });
      // Usable: the next start configures it from the same listing, offline if need be.
      await view.remember().catch(() => {});
      return asRun(config);
    },
    stamp: () =>
      deps.store.cacheStamp(
        repo,
        revision,
        Object.fromEntries(DETECTION_FILES.map((p) => [p, p])),
      ),
  };
}

/** What a directory holds now (names, sizes, modification times): changes when a file does. */
async function directoryStamp(dir: string): Promise<string> {
  const files = await listDirectoryFiles(dir).catch(() => undefined);
  if (!files) return "absent";
  const parts = await Promise.all(
    files.map(async (f) => `${f}=${await fileStamp(join(dir, ...f.split("/")))}`),
  );
  return parts.join(";");
}
