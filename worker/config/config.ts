/** Worker settings: every `SVC_*` environment variable, parsed and validated once at start-up. */
import { z } from "zod";

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const list = z.string().transform((s) =>
  s.split(",").map((x) => x.trim()).filter((x) => x.length > 0)
);
const bool = z.enum(["0", "1", "true", "false", "yes", "no"]).transform((v) =>
  v === "1" || v === "true" || v === "yes"
);

/** Schema of the worker's settings; keys are the environment variable names. */
export const WorkerEnvSchema = z.object({
  SVC_PORT: int(0, 65535).default(8080),
  SVC_HOST: z.string().min(1).default("0.0.0.0"),
  SVC_DEVICE: z.enum(["cpu", "cuda", "auto"]).default("auto"),
  SVC_MODELS_DIR: z.string().min(1).optional(),
  SVC_CACHE_DIR: z.string().min(1).optional(),
  SVC_CLUSTER_CACHE: z.string().min(1).optional(),
  SVC_HUB_URL: z.string().url().default("https://huggingface.co"),
  HF_TOKEN: z.string().min(1).optional(),
  SVC_MODEL_FILTER: list.optional(),
  SVC_PRELOAD_MODELS: list.optional(),
  SVC_MEMORY_PRESSURE_THRESHOLD_PERCENT: z.coerce.number().min(1).max(100).default(85),
  SVC_MAX_BATCH_REQUESTS: int(1, 4096).default(64),
  SVC_MAX_BATCH_WAIT_MS: z.coerce.number().min(0).max(1000).default(0),
  SVC_MAX_QUEUE_ITEMS: int(1, 1_000_000).default(4096),
  SVC_LOAD_WAIT_MS: int(0, 600_000).default(30_000),
  SVC_INTRA_OP_THREADS: int(0, 256).default(0),
  SVC_MAX_RUN_TOKENS: int(0, 1_048_576).default(0),
  SVC_ATTENTION_BACKEND: z.enum(["auto", "default", "flash_attention_2", "sdpa", "eager"]).default(
    "auto",
  ),
  SVC_MAX_LOADED_MODELS: int(1, 1000).default(16),
  SVC_LOG_JSON: bool.default(false),
  SVC_LOG_LEVEL: z.enum(["debug", "info", "warn", "error"]).default("info"),
  SVC_SHUTDOWN_DRAIN_S: z.coerce.number().min(0).max(600).default(25),
});

/** Validated worker settings. */
export type WorkerConfig = z.infer<typeof WorkerEnvSchema> & {
  /** Where weights are cached locally (resolved default when unset). */
  cacheDir: string;
};

/** Parse the environment; throws an Error naming every bad variable. */
export function loadWorkerConfig(env: Record<string, string | undefined>): WorkerConfig {
  const raw: Record<string, string> = {};
  for (const key of Object.keys(WorkerEnvSchema.shape)) {
    const v = env[key];
    if (v !== undefined && v !== "") raw[key] = v;
  }
  const r = WorkerEnvSchema.safeParse(raw);
  if (!r.success) {
    // Name the variable but never echo its value: some of them are secrets.
    const msgs = r.error.issues.map((i) => `${String(i.path[0])}: ${i.message}`);
    throw new Error(`invalid configuration: ${msgs.join("; ")}`);
  }
  const home = env.HOME ?? "/tmp";
  const cacheDir = r.data.SVC_CACHE_DIR ?? `${env.XDG_CACHE_HOME ?? `${home}/.cache`}/svc/models`;
  return { ...r.data, cacheDir };
}
