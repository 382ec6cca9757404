/**
 * The worker's settings: every variable it reads, in one schema of shared field helpers, parsed
 * once at start-up (`loadWorkerSettings`) into typed slices that subsystems receive. Nothing else
 * in the worker reads the environment.
 */
import { WORKER_ID_RE } from "@svc/shared/fleet/protocol";
import type { InputLimits } from "@svc/shared/codec/limits";
import { MAX_IMAGES_PER_ITEM } from "@svc/shared/schemas/item";
import { loraAllowProblem } from "../lora/allow.ts";
import type { BrowserPolicy } from "@svc/shared/http/browser_guard";
import {
  bool,
  browserPolicyOf,
  checkCommon,
  COMMON_FIELDS,
  decimal,
  type Env,
  type HttpSettings,
  httpSettingsOf,
  int,
  limitsOf,
  list,
  type LogSettings,
  logSettingsOf,
  millis,
  oneOf,
  path,
  type ReferenceSection,
  type SchemaValues,
  seconds,
  secret,
  settingsSchema,
  type SliceMap,
  type SliceOf,
  sliceOf,
  slug,
  str,
  unknownSettingsWarning,
  url,
} from "@svc/shared/config";
import { defaultWorkerId, fleetUrlOf, routerUrlProblem } from "../fleet/config.ts";
import { ATTENTION_BACKENDS, type AttentionBackend } from "../inference/cuda_provider.ts";
import type { WeightSettings } from "../weights/settings.ts";
import { DEFAULT_HUB_URL } from "../weights/hub.ts";
import { DEFAULT_HTTP_TIMEOUT_MS } from "../weights/http.ts";
import { DEFAULT_IDLE_TIMEOUT_MS } from "../weights/atomic_file.ts";
import { DEFAULT_MAX_PARALLEL } from "../weights/store.ts";
import { DEFAULT_LOAD_FAILURE_COOLDOWN_MS } from "../registry/load_failure.ts";
import { type ModelEntry, modelEntryProblem, parseModelEntries } from "../catalog/model_entries.ts";
import { DEFAULT_EXTRACT_BUDGET, type ExtractBudget } from "../families/extract_budget.ts";
import { DEFAULT_MODEL_JSON_BOUNDS, type ModelJsonBounds } from "../weights/model_json.ts";

/** Worker-only settings of a standalone worker. */
const WORKER_FIELDS = {
  SVC_DEVICE: oneOf(["cpu", "cuda", "auto"], {
    default: "auto",
    doc: "`cpu`, `cuda`, or `auto`: CUDA when `nvidia-smi` finds a GPU and ONNX Runtime's CUDA " +
      "provider starts, else the CPU with a warning. `cuda` refuses to start without a " +
      "provider (`deno task gpu:setup`). See docs/gpu.md: CUDA was **not run here** (no GPU)",
  }),
  SVC_ATTENTION_BACKEND: oneOf(ATTENTION_BACKENDS, {
    default: "auto",
    doc: "attention kernels of CUDA sessions: `auto` (ONNX Runtime's choice), `flash` (alias " +
      "`flash_attention_2`), `memory_efficient` or `math` (unfused), each falling back to " +
      "unfused where its kernel does not take the shape. Set through ONNX Runtime's " +
      "`ORT_DISABLE_*_ATTENTION` switches (onnxruntime-node passes no `sdpa_kernel`). **No " +
      "effect on CPU**, nor on graphs without fused attention nodes; not run here (no GPU)",
  }),
  SVC_MODELS_DIR: path({
    default: undefined,
    doc: "directory of extra catalog entries (`*.json`), added to the built-in catalog (same id " +
      "replaces)",
  }),
  SVC_MODELS: list({
    item: modelEntryProblem,
    doc: "models to serve besides the catalog, each configured from its own files (family, " +
      "pooling, lengths, prompts, labels: see docs/catalog.md), comma-separated: a hub " +
      "repository `org/name[@revision]` (fetched like catalog weights) or `ID=DIRECTORY` (a " +
      "local directory laid out like a hub repository, read in place, never the hub). " +
      "`;key=value` after an entry says what its files do not (`acme/e5=/srv/e5;pooling=mean`)",
  }),
  SVC_MODELS_FOLLOW_LINKS: bool({
    default: false,
    doc: "`1` lets the files of an `SVC_MODELS` directory be links to files outside it (a hub " +
      "cache's snapshot folder links to its blobs); otherwise such a file is refused, a " +
      "permanent load failure naming the file",
  }),
  SVC_MAX_MODEL_JSON_BYTES: int({
    min: 1024,
    max: 1 << 30,
    default: DEFAULT_MODEL_JSON_BOUNDS.maxBytes,
    doc: "largest JSON configuration file (`config.json`, `gliner_config.json`, …) a model " +
      "directory or an `SVC_MODELS` repository may bring; a larger one fails the load, naming it",
  }),
  SVC_MAX_TOKENIZER_JSON_BYTES: int({
    min: 1024,
    max: 1 << 30,
    default: DEFAULT_MODEL_JSON_BOUNDS.maxTokenizerBytes,
    doc: "largest `tokenizer.json` a model may bring (the largest public ones are some 35 MB); " +
      "a larger one fails the load, naming it",
  }),
  SVC_MAX_MODEL_JSON_DEPTH: int({
    min: 8,
    max: 1000,
    default: DEFAULT_MODEL_JSON_BOUNDS.maxDepth,
    doc: "deepest nesting of arrays and objects in a model's JSON files (real ones nest fewer " +
      "than 10 levels), checked before they are parsed; a deeper file fails the load, naming it",
  }),
  SVC_CACHE_DIR: path({
    default: undefined,
    fallback: (env: Env) => `${env.XDG_CACHE_HOME || `${env.HOME || "/tmp"}/.cache`}/svc/models`,
    shown: "`$XDG_CACHE_HOME/svc/models`, else `~/.cache/svc/models`",
    doc: "local weight cache, layout `<org>/<name>/@<revision>/<path>` (one folder per revision)",
  }),
  SVC_CLUSTER_CACHE: path({
    default: undefined,
    doc: "shared weight cache, layout `<org>/<name>/<path>` (one version per repository), tried " +
      "before the hub: a directory is read in place (never copied), an http(s) base URL is copied " +
      "into the local cache",
  }),
  SVC_HUB_URL: url({ default: DEFAULT_HUB_URL, doc: "model hub base URL" }),
  SVC_HUB_DISABLED: bool({ default: false, doc: "`1` never calls the hub (air-gapped machines)" }),
  HF_TOKEN: secret({ doc: "hub token for gated models (never logged)" }),
  SVC_WEIGHTS_HTTP_TIMEOUT_MS: millis({
    min: 1,
    max: 86_400_000,
    default: DEFAULT_HTTP_TIMEOUT_MS,
    doc: "bound on each weight-download HTTP call's headers",
  }),
  SVC_WEIGHTS_IDLE_TIMEOUT_MS: millis({
    min: 1,
    max: 86_400_000,
    default: DEFAULT_IDLE_TIMEOUT_MS,
    doc: "a download with no data for this long is abandoned",
  }),
  SVC_WEIGHTS_MAX_PARALLEL: int({
    min: 1,
    max: 1024,
    default: DEFAULT_MAX_PARALLEL,
    doc: "files of one model downloaded at once",
  }),
  SVC_MODEL_FILTER: list({
    doc: "comma-separated ids or globs (`BAAI/*`); other catalog models answer 404 " +
      "(`SVC_MODELS` entries are served whatever it says)",
  }),
  SVC_PRELOAD_MODELS: list({
    doc: "comma-separated models loaded before `/readyz` turns 200 (`SVC_MODELS` entries are " +
      "loaded before it too)",
  }),
  SVC_MEMORY_PRESSURE_THRESHOLD_PERCENT: decimal({
    min: 1,
    max: 100,
    default: 85,
    doc: "above this memory use (system RAM on CPU), the least recently used idle model is " +
      "evicted",
  }),
  SVC_MAX_LOADED_MODELS: int({
    min: 1,
    max: 1000,
    default: 16,
    doc: "cap on loaded models; loading one more evicts the LRU idle model",
  }),
  SVC_MAX_BATCH_REQUESTS: int({
    min: 1,
    max: 4096,
    default: 64,
    doc: "requests per batch: a batch takes items of at most this many requests (a request's " +
      "items may span batches)",
  }),
  SVC_MAX_BATCH_ITEMS: int({
    min: 1,
    max: 4096,
    default: 64,
    doc: "items per batch, whatever the number of requests (with the model's " +
      "`batch_token_budget`, it bounds one batch's memory and the wait of the requests behind " +
      "it). With both defaults the item cap is reached first unless requests carry one item each",
  }),
  SVC_MAX_BATCH_WAIT_MS: decimal({
    min: 0,
    max: 1000,
    default: 0,
    doc: "how long an idle model waits for a batch to fill; `0` dispatches at once (while a " +
      "batch runs, the next one fills anyway)",
  }),
  SVC_MAX_QUEUE_ITEMS: int({
    min: 1,
    max: 1_000_000,
    default: 4096,
    doc: "items waiting per model; beyond it `503 QUEUE_FULL` at once. A request that alone " +
      "needs more work items than this is a `400` naming the setting",
  }),
  SVC_LOAD_WAIT_MS: millis({
    min: 0,
    max: 600_000,
    default: 30_000,
    doc: "how long a request waits for its model to load before `503 MODEL_LOADING` (the " +
      "load continues)",
  }),
  SVC_LOAD_FAILURE_COOLDOWN_MS: millis({
    min: 0,
    max: 86_400_000,
    default: DEFAULT_LOAD_FAILURE_COOLDOWN_MS,
    doc: "a failed load is answered `502 MODEL_LOAD_FAILED` at once for this long; then a " +
      "transient cause (hub unreachable, timeout, a file that does not load from a copy whose " +
      "source stated neither size nor hash) is retried by the next request, a permanent one " +
      "(not found, gated, incompatible graph) only once the model's cached files change",
  }),
  SVC_MAX_LORAS_PER_MODEL: int({
    min: 1,
    max: 100,
    default: 10,
    doc: "LoRA adapters kept loaded per model (one patched session each, counted in the " +
      "model's memory); loading one more evicts the least recently used idle adapter, which " +
      "reloads on demand",
  }),
  SVC_LORA_WAIT_MS: millis({
    min: 0,
    max: 600_000,
    default: 5_000,
    doc: "how long a request waits for its LoRA adapter to load before `503 LORA_LOADING` " +
      "with `Retry-After: 2` (the load continues)",
  }),
  SVC_MAX_LORA_BYTES: int({
    min: 1024,
    max: 4 * 1024 * 1024 * 1024,
    default: 256 * 1024 * 1024,
    shown: "`268435456` (256 MiB)",
    doc: "largest `adapter_model.safetensors` (and bound of `adapter_config.json`, 1 MiB) a " +
      "LoRA adapter may have; a larger one is a `400`, before it is downloaded when the hub or " +
      "an http cluster cache states its size, else as soon as its download passes the bound " +
      "(nothing past it is written, the partial file is deleted)",
  }),
  SVC_LORA_DISK_BYTES: int({
    min: 2 * 1024 * 1024,
    max: 1024 * 1024 * 1024 * 1024,
    default: 2 * 1024 * 1024 * 1024,
    shown: "`2147483648` (2 GiB)",
    doc: "LoRA adapter files kept in `SVC_CACHE_DIR`, all models together; past it the files " +
      "of the least recently used adapters are deleted (a loaded adapter keeps serving). At " +
      "least `SVC_MAX_LORA_BYTES` plus 1 MiB",
  }),
  SVC_LORA_ALLOW: list({
    item: loraAllowProblem,
    doc: "hub owners (`org`) and repositories (`org/name`) whose LoRA adapters clients may name " +
      "in `options.lora_id` (any other is a `400`, before any download); unset: any public " +
      "repository, including ones a client uploaded",
  }),
  SVC_INTRA_OP_THREADS: int({
    min: 0,
    max: 256,
    default: 0,
    shown: "`0` (auto)",
    doc: "ONNX Runtime intra-op threads: the worker's one compute budget on CPU. Auto is the " +
      "CPUs this process may use (cgroup `cpu.max` quota, CPU affinity, else the runtime's " +
      "count); every model's session gets it and runs of different models take turns on it",
  }),
  SVC_FORCE_FP32: bool({
    default: false,
    doc: "`1` ignores the per-device files of catalog entries (`device_files`, e.g. the int8 " +
      "graph picked on CPU, also the quantised variant an `SVC_MODELS` repository carries) and " +
      "runs every model's `files.model`",
  }),
  SVC_MAX_RUN_TOKENS: int({
    min: 0,
    max: 1_048_576,
    default: 0,
    shown: "`0` (auto)",
    doc: "cap on padded tokens per ONNX run inside a batch; auto is 1024 on CPU (fastest here) " +
      "and the model's `batch_token_budget` on CUDA",
  }),
  SVC_CPU_MAX_ITEM_TOKENS: int({
    min: 16,
    max: 131_072,
    default: 2048,
    doc: "longest item (tokens) a CPU worker runs; longer texts are truncated to it (one item " +
      "is one ONNX run; memory per length in docs/catalog.md). GPU workers use the model's length",
  }),
  SVC_BUNDLE: slug({
    default: "default",
    doc: "which bundle this worker serves; `all` serves every bundle (what `deno task start` runs)",
  }),
  SVC_SHUTDOWN_DRAIN_S: seconds({
    min: 0,
    max: 600,
    default: 25,
    doc: "graceful-shutdown drain bound",
  }),
};

/** Image inputs: the preprocessing pool and the bounds every image request is checked against. */
const IMAGE_FIELDS = {
  SVC_IMAGE_WORKERS: int({
    min: 1,
    max: 64,
    default: 4,
    doc: "threads that decode, resize and normalise images (started on first use; never the " +
      "main thread)",
  }),
  SVC_IMAGE_WORKERS_PER_REQUEST: int({
    min: 0,
    max: 64,
    default: 0,
    shown: "`0` (auto)",
    doc: "images of one request prepared at once; auto is one thread fewer than " +
      "`SVC_IMAGE_WORKERS` (at least one), so another request always finds a thread. Waiting " +
      "images of different requests take turns",
  }),
  SVC_MAX_IMAGE_BYTES: int({
    min: 1,
    max: 1024 * 1024 * 1024,
    default: 10 * 1024 * 1024,
    shown: "`10485760` (10 MiB)",
    doc: "largest encoded image, in bytes",
  }),
  SVC_MAX_IMAGE_PIXELS: int({
    min: 1,
    // libvips' own ceiling (0x3FFF²).
    max: 268_402_689,
    default: 40_000_000,
    doc: "most pixels (width × height, read from the header before decoding) of one image",
  }),
  SVC_MAX_IMAGE_ASPECT_RATIO: int({
    min: 1,
    max: 1_000_000,
    default: 100,
    doc: "longest edge over shortest edge of one image, read from the header: a 1×40,000,000 " +
      "PNG (7.5 s to decode, 77 KB) is refused before decoding. A model whose resize would " +
      "still leave a side under one pixel refuses the image too",
  }),
  SVC_MAX_JPEG_SCANS: int({
    min: 1,
    max: 1_000_000,
    default: 256,
    doc: "scans of one JPEG, counted from its markers before decoding (a progressive decoder " +
      "passes over the whole image once per scan: 10,000 repeated scans took 35 s). Ordinary " +
      "progressive JPEGs have about 10",
  }),
  SVC_IMAGE_DECODE_TIMEOUT_MS: millis({
    min: 1,
    max: 3_600_000,
    default: 10_000,
    doc: "longest time one image may take on its thread; past it the request is a `400` at " +
      "once. The decoder's native work cannot be interrupted: its thread is set aside until it " +
      "ends and a fresh one takes its place, while the threads working and set aside number " +
      "under twice `SVC_IMAGE_WORKERS`",
  }),
  SVC_MAX_IMAGES_PER_ITEM: int({
    min: 1,
    max: MAX_IMAGES_PER_ITEM,
    default: 8,
    doc: "images in one item",
  }),
  SVC_MAX_IMAGES_PER_REQUEST: int({
    min: 1,
    max: 65_536,
    default: 64,
    doc: "images in one request (each becomes a float tensor of the model's input size while " +
      "it waits for its batch)",
  }),
  SVC_MAX_IMAGE_QUEUE: int({
    min: 1,
    max: 1_000_000,
    default: 256,
    doc: "images waiting for a preprocessing thread; beyond it `503 QUEUE_FULL` at once",
  }),
};

/**
 * What one request may make the worker compute, where items multiply (extract labels × windows,
 * MaxSim query × item tokens): families/extract_budget.ts, service/embedding_score.ts.
 */
const COST_FIELDS = {
  SVC_MAX_EXTRACT_ITEM_TOKENS: int({
    min: 256,
    max: 1 << 30,
    default: DEFAULT_EXTRACT_BUDGET.maxItemTokens,
    doc: "most tokens a model may read for one extract item, every run of it together: GLiNER " +
      "reads the label prompt with each window of the text, and a multitask model reads it again " +
      "per prompt of heads × relation types (counted for the most heads the item can have); NLI " +
      "reads one (text, hypothesis) pair per label. Counted once the item is tokenised, before " +
      "its batch runs; a larger item is a `400` naming this setting",
  }),
  SVC_MAX_EXTRACT_REQUEST_TOKENS: int({
    min: 256,
    max: 1 << 30,
    default: DEFAULT_EXTRACT_BUDGET.maxRequestTokens,
    doc: "most tokens a model may read for one extract request, all its items together, counted " +
      "as `SVC_MAX_EXTRACT_ITEM_TOKENS` counts one item's, once the items are tokenised and " +
      "before any of them runs: a larger request is a `400` naming this setting. An answer " +
      "that cost more than `SVC_MAX_EXTRACT_ITEM_TOKENS` says how much in `X-SVC-Extract-Tokens`",
  }),
  SVC_MAX_SPANS_PER_LABEL: int({
    min: 1,
    max: 1_048_576,
    default: DEFAULT_EXTRACT_BUDGET.maxSpansPerLabel,
    doc: "candidate spans a span model (GLiNER) keeps per label and item, the best-scoring, " +
      "across all windows: memory stays labels × this whatever `options.threshold` is, and a " +
      "label yields at most this many entities, relation tails or schema values per item",
  }),
  SVC_MAX_MAXSIM_OPS: int({
    min: 1_000_000,
    max: Number.MAX_SAFE_INTEGER,
    default: 4_000_000_000,
    doc: "most multiply-adds of one multi-vector (MaxSim) score request: query tokens × the " +
      "items' tokens × dimensions, counted once they are encoded; beyond it a `400` naming this " +
      "setting. Computed on the main thread in slices that let other requests and probes in " +
      "(about 0.5-1 G multiply-adds a second per core)",
  }),
};

/** Settings of a worker that joins a fleet (all ignored while `SVC_ROUTER_URL` is unset). */
const FLEET_FIELDS = {
  SVC_ROUTER_URL: list({
    // Never quoted in an error: a URL may carry a token in its query.
    secret: true,
    item: routerUrlProblem,
    doc: "router base URL (http(s) or ws(s)), or several comma-separated: the worker holds a " +
      "connection to each (every router instance then serves it, and losing one loses " +
      "nothing); unset runs standalone",
  }),
  SVC_WORKER_ID: str({
    default: undefined,
    pattern: WORKER_ID_RE,
    patternName: "1-128 characters of A-Z, a-z, 0-9, '.', '_', ':', '-' (starting alphanumeric)",
    shown: "`hostname-pid-random`",
    doc: "identity in the router",
  }),
  SVC_WORKER_TRANSPORT: oneOf(["auto", "connection", "http"], {
    default: "auto",
    doc: "how the router sends this worker its requests: `connection` over the WebSocket the " +
      "worker dials (no inbound port needed: NAT, a laptop, a cluster without ingress), `http` " +
      "to `SVC_ADVERTISE_URL`; `auto` is `connection`",
  }),
  SVC_WORKER_HTTP: oneOf(["on", "off"], {
    default: "on",
    doc: "`on` serves the worker's own HTTP port (`SVC_HOST`:`SVC_PORT`: probes, metrics, " +
      "direct requests); `off` opens no port at all: requests come only over the connection " +
      "to the router (needs `SVC_ROUTER_URL` and the connection transport)",
  }),
  SVC_ADVERTISE_URL: url({
    default: undefined,
    noCredentials: "",
    shown: "none (`connection`), `http://127.0.0.1:<port>` (`http`)",
    doc: "where the router reaches this worker over HTTP (`SVC_WORKER_TRANSPORT=http`); with " +
      "the connection transport it is optional and only announced",
  }),
  SVC_MACHINE_PROFILE: slug({
    default: undefined,
    shown: "detected GPU type, else `cpu`",
    doc: "pool profile (normalised `nvidia-smi` name such as `l4`, `a100-80gb`; GPU detection " +
      "not run here)",
  }),
  SVC_POOL: slug({ default: undefined, shown: "the machine profile", doc: "pool name" }),
  SVC_ROUTER_RECONNECT_MAX_MS: millis({
    min: 100,
    max: 600_000,
    default: 10_000,
    doc: "cap of the reconnect backoff (with jitter)",
  }),
};

const SCHEMA = settingsSchema(
  { ...COMMON_FIELDS, ...WORKER_FIELDS, ...IMAGE_FIELDS, ...COST_FIELDS, ...FLEET_FIELDS },
  (v, issue) => {
    checkCommon(v, issue);
    if (v.SVC_LORA_DISK_BYTES < v.SVC_MAX_LORA_BYTES + 1024 * 1024) {
      issue("SVC_LORA_DISK_BYTES", "must be at least SVC_MAX_LORA_BYTES plus 1 MiB");
    }
    if (v.SVC_WORKER_HTTP === "off") {
      if (v.SVC_ROUTER_URL.length === 0) {
        issue("SVC_WORKER_HTTP", "can be `off` only with SVC_ROUTER_URL (else nothing serves)");
      } else if (v.SVC_WORKER_TRANSPORT === "http") {
        issue("SVC_WORKER_HTTP", "can be `off` only with the connection transport");
      }
    }
    if (v.SVC_ROUTER_URL.length > 0 && v.SVC_WORKER_TOKEN === undefined) {
      issue("SVC_WORKER_TOKEN", "is required when SVC_ROUTER_URL is set");
    }
    try {
      parseModelEntries(v.SVC_MODELS, "/");
    } catch (err) {
      issue("SVC_MODELS", (err as Error).message);
    }
  },
);

/** Every variable the worker reads. */
export const WORKER_SETTING_NAMES: readonly string[] = SCHEMA.names;

/** The worker's sections of the configuration reference (docs/configuration.md). */
export const WORKER_REFERENCE: readonly ReferenceSection[] = [
  { id: "worker", fields: WORKER_FIELDS },
  { id: "worker-images", fields: IMAGE_FIELDS },
  { id: "worker-cost", fields: COST_FIELDS },
  { id: "worker-fleet", fields: FLEET_FIELDS },
];

/** Listen address of the HTTP server. */
export interface ListenSettings {
  host: string;
  port: number;
  /** False: no HTTP server (`SVC_WORKER_HTTP=off`; requests come over the router connection). */
  enabled?: boolean;
}

/** The worker's parsed variables, keyed by name. */
type Values = SchemaValues<typeof SCHEMA>;

/** How the model registry batches, queues, loads and evicts: slice key to variable. */
const SCHEDULING = {
  /** Requests with items in one batch. */
  maxBatchRequests: "SVC_MAX_BATCH_REQUESTS",
  /** Items in one batch. */
  maxBatchItems: "SVC_MAX_BATCH_ITEMS",
  /** How long an idle model waits for a batch to fill. */
  maxWaitMs: "SVC_MAX_BATCH_WAIT_MS",
  /** Items waiting per model before QUEUE_FULL. */
  maxQueueItems: "SVC_MAX_QUEUE_ITEMS",
  /** Loaded models before the least recently used idle one is evicted. */
  maxLoadedModels: "SVC_MAX_LOADED_MODELS",
  /** How long a failed load is answered at once without a new attempt (see load_failure.ts). */
  loadFailureCooldownMs: "SVC_LOAD_FAILURE_COOLDOWN_MS",
  /** Cap on padded tokens per ONNX run (0: automatic per device, see runTokenBudget). */
  maxRunTokens: "SVC_MAX_RUN_TOKENS",
  /** Longest item (tokens) a CPU worker runs; longer texts are truncated to it. */
  cpuMaxItemTokens: "SVC_CPU_MAX_ITEM_TOKENS",
  /** Memory use above which idle models are evicted. */
  memoryThresholdPercent: "SVC_MEMORY_PRESSURE_THRESHOLD_PERCENT",
} as const satisfies SliceMap<Values>;

/** How the model registry batches, queues, loads and evicts. */
export type SchedulingSettings = SliceOf<Values, typeof SCHEDULING>;

/** LoRA adapters on encode models: slice key to variable. */
const LORA = {
  /** Adapters kept loaded per model. */
  maxPerModel: "SVC_MAX_LORAS_PER_MODEL",
  /** How long a request waits for its adapter before 503 LORA_LOADING. */
  waitMs: "SVC_LORA_WAIT_MS",
  /** Largest adapter weights file accepted. */
  maxLoraBytes: "SVC_MAX_LORA_BYTES",
  /** Adapter files kept on disk, all models together. */
  diskBytes: "SVC_LORA_DISK_BYTES",
  /** Adapter owners and repositories clients may name (empty: any). */
  allow: "SVC_LORA_ALLOW",
} as const satisfies SliceMap<Values>;

/** LoRA adapters on encode models. */
export type LoraSettings = SliceOf<Values, typeof LORA>;

/** Image preprocessing, pool size and the bounds of image inputs: slice key to variable. */
const IMAGES = {
  /** Threads of the image pool. */
  workers: "SVC_IMAGE_WORKERS",
  /** Images of one request prepared at once; 0: one thread fewer than `workers`. */
  workersPerRequest: "SVC_IMAGE_WORKERS_PER_REQUEST",
  /** Time one image may take on its thread. */
  decodeTimeoutMs: "SVC_IMAGE_DECODE_TIMEOUT_MS",
  maxBytes: "SVC_MAX_IMAGE_BYTES",
  maxPixels: "SVC_MAX_IMAGE_PIXELS",
  maxAspectRatio: "SVC_MAX_IMAGE_ASPECT_RATIO",
  maxJpegScans: "SVC_MAX_JPEG_SCANS",
  maxPerItem: "SVC_MAX_IMAGES_PER_ITEM",
  maxPerRequest: "SVC_MAX_IMAGES_PER_REQUEST",
  /** Images waiting for a pool thread. */
  maxQueue: "SVC_MAX_IMAGE_QUEUE",
} as const satisfies SliceMap<Values>;

/** Image preprocessing: pool size and the bounds of image inputs. */
export type ImageSettings = SliceOf<Values, typeof IMAGES>;

/** Fleet membership (present when `SVC_ROUTER_URL` is set). */
export interface FleetSettings {
  /** ws(s) URL of the router's fleet endpoint (the first of `routerWsUrls`). */
  routerWsUrl: string;
  /** Every router URL given: the worker holds one connection to each (distinct entries). */
  routerWsUrls: string[];
  token: string;
  workerId: string;
  /**
   * Base URL the router may use to reach this worker over HTTP; undefined: none with the
   * connection transport, loopback at the bound port with HTTP.
   */
  advertiseUrl: string | undefined;
  /** How the router sends requests (`auto` resolved: `connection`). */
  transport: "connection" | "http";
  /** `SVC_MACHINE_PROFILE`; undefined means "detect the GPU type". */
  machineProfile: string | undefined;
  bundle: string;
  /** `SVC_POOL`; undefined means "same as the machine profile". */
  pool: string | undefined;
  /** Cap of the reconnect backoff. */
  reconnectMaxMs: number;
  /**
   * The fleet's worker secret (`SVC_WORKER_API_KEY`), when the worker has one: its registrations
   * carry a proof of the worker id made with it.
   */
  secret: string | undefined;
}

/** The worker's settings, in the slices its subsystems receive. */
export interface WorkerSettings {
  listen: ListenSettings;
  /** `auto` means CUDA when a GPU was detected. */
  device: "cpu" | "cuda" | "auto";
  catalog: {
    modelsDir: string | undefined;
    filter: string[] | undefined;
    /** `SVC_MODELS`: models configured from their own files (served whatever the filter says). */
    entries: ModelEntry[];
  };
  /** Models loaded before the worker reports ready. */
  preload: string[];
  weights: WeightSettings;
  /** Bounds of the JSON files models bring (configuration files, tokenizers). */
  modelJson: ModelJsonBounds;
  scheduling: SchedulingSettings;
  /** ONNX Runtime intra-op threads, the compute budget (0: the CPUs this process may use). */
  intraOpThreads: number;
  /** Keep `files` even where a catalog entry names other files for this device (int8 on CPU). */
  forceFp32: boolean;
  /** Attention kernels of CUDA sessions (no effect on CPU). */
  attentionBackend: AttentionBackend;
  /** How long a request waits for its model to load. */
  loadWaitMs: number;
  /** LoRA adapters: per-model cap, request wait, file size bound. */
  lora: LoraSettings;
  limits: InputLimits;
  images: ImageSettings;
  /** What one extract item may cost its model. */
  extract: ExtractBudget;
  /** Most multiply-adds of one multi-vector score request (SVC_MAX_MAXSIM_OPS). */
  maxMaxSimOps: number;
  /** Connection and body-reading bounds of the HTTP server. */
  http: HttpSettings;
  /** How browsers are treated (CORS, Origin, Host on loopback). */
  browser: BrowserPolicy;
  log: LogSettings;
  /** The bundle this worker serves. */
  bundle: string;
  /** Key every request but the probes must present (`SVC_WORKER_API_KEY`); unset: open. */
  apiKey: string | undefined;
  /** Bound of the graceful-shutdown drain. */
  shutdownDrainS: number;
  fleet: FleetSettings | null;
  /** Secret values (tokens) that must never appear in a log line. */
  secrets: string[];
  /** Warnings to log at start (unknown `SVC_*` variables, with the closest known name). */
  warnings: string[];
}

/**
 * Parse the worker's settings; throws a ConfigError naming every bad variable. `alsoKnown`:
 * other settings read in this process (`deno task start`: the router's), which are not typos.
 */
export function loadWorkerSettings(env: Env, alsoKnown: readonly string[] = []): WorkerSettings {
  const v = SCHEMA.load(env);
  const unknown = unknownSettingsWarning(env, [...SCHEMA.names, ...alsoKnown]);
  // Relative directories are the user's: npm and deno task run in the project's folder and say
  // where they were started in INIT_CWD.
  const baseDir = env.INIT_CWD?.startsWith("/") ? env.INIT_CWD : Deno.cwd();
  const entries = parseModelEntries(v.SVC_MODELS, baseDir);
  const directories = new Map(
    entries.flatMap((e) => e.kind === "directory" ? [[e.id, e.path] as const] : []),
  );
  const fleet: FleetSettings | null = v.SVC_ROUTER_URL.length === 0 ? null : {
    routerWsUrl: fleetUrlOf(v.SVC_ROUTER_URL[0]),
    routerWsUrls: [...new Set(v.SVC_ROUTER_URL.map(fleetUrlOf))],
    token: v.SVC_WORKER_TOKEN!,
    workerId: v.SVC_WORKER_ID ?? defaultWorkerId(),
    advertiseUrl: v.SVC_ADVERTISE_URL?.replace(/\/+$/, ""),
    transport: v.SVC_WORKER_TRANSPORT === "http" ? "http" : "connection",
    machineProfile: v.SVC_MACHINE_PROFILE,
    bundle: v.SVC_BUNDLE,
    pool: v.SVC_POOL,
    reconnectMaxMs: v.SVC_ROUTER_RECONNECT_MAX_MS,
    secret: v.SVC_WORKER_API_KEY,
  };
  return {
    listen: { host: v.SVC_HOST, port: v.SVC_PORT, enabled: v.SVC_WORKER_HTTP === "on" },
    device: v.SVC_DEVICE,
    catalog: {
      modelsDir: v.SVC_MODELS_DIR,
      filter: v.SVC_MODEL_FILTER.length > 0 ? v.SVC_MODEL_FILTER : undefined,
      entries,
    },
    preload: v.SVC_PRELOAD_MODELS,
    weights: {
      cacheDir: v.SVC_CACHE_DIR!,
      clusterCache: v.SVC_CLUSTER_CACHE,
      hubUrl: v.SVC_HUB_URL,
      token: v.HF_TOKEN,
      timeoutMs: v.SVC_WEIGHTS_HTTP_TIMEOUT_MS,
      idleTimeoutMs: v.SVC_WEIGHTS_IDLE_TIMEOUT_MS,
      maxParallel: v.SVC_WEIGHTS_MAX_PARALLEL,
      hubDisabled: v.SVC_HUB_DISABLED,
      directories,
      followLinks: v.SVC_MODELS_FOLLOW_LINKS,
    },
    modelJson: {
      maxBytes: v.SVC_MAX_MODEL_JSON_BYTES,
      maxTokenizerBytes: v.SVC_MAX_TOKENIZER_JSON_BYTES,
      maxDepth: v.SVC_MAX_MODEL_JSON_DEPTH,
    },
    intraOpThreads: v.SVC_INTRA_OP_THREADS,
    forceFp32: v.SVC_FORCE_FP32,
    attentionBackend: v.SVC_ATTENTION_BACKEND,
    scheduling: sliceOf(v, SCHEDULING),
    loadWaitMs: v.SVC_LOAD_WAIT_MS,
    lora: sliceOf(v, LORA),
    limits: limitsOf(v),
    images: sliceOf(v, IMAGES),
    extract: {
      maxItemTokens: v.SVC_MAX_EXTRACT_ITEM_TOKENS,
      maxSpansPerLabel: v.SVC_MAX_SPANS_PER_LABEL,
      maxRequestTokens: v.SVC_MAX_EXTRACT_REQUEST_TOKENS,
    },
    maxMaxSimOps: v.SVC_MAX_MAXSIM_OPS,
    http: httpSettingsOf(v),
    browser: browserPolicyOf(v),
    log: logSettingsOf(v),
    bundle: v.SVC_BUNDLE,
    apiKey: v.SVC_WORKER_API_KEY,
    shutdownDrainS: v.SVC_SHUTDOWN_DRAIN_S,
    fleet,
    secrets: SCHEMA.secretsOf(v),
    warnings: unknown ? [unknown] : [],
  };
}
