/** Everything a route needs, passed explicitly (no globals). */
import type { InputLimits } from "@svc/shared/codec/limits";
import type { BodyReadOptions } from "@svc/shared/http/read_body";
import type { WorkerSettings } from "../config/settings.ts";
import type { ModelRegistry } from "../registry/registry.ts";
import type { ServedCatalog } from "../catalog/served.ts";
import type { WorkerMetrics } from "../telemetry/metrics.ts";
import type { Logger } from "@svc/shared/log";
import type { ServingState } from "./state.ts";
import type { ImageInputs } from "../service/inputs.ts";
import type { WeightSourcesState } from "../weights/sources_state.ts";

/** Dependencies of the worker's HTTP app. */
export interface WorkerContext {
  settings: WorkerSettings;
  /** What this worker serves, and the lookup of a served name. */
  catalog: ServedCatalog;
  registry: ModelRegistry;
  metrics: WorkerMetrics;
  log: Logger;
  state: ServingState;
  limits: InputLimits;
  /** The image pool and the image limits. */
  images: ImageInputs;
  /** How request bodies are read: size limit, the process-wide in-flight budget, idle timeout. */
  body: BodyReadOptions;
  /** The bundle this worker serves; models of other bundles get 409 DEPENDENCY_CONFLICT. */
  bundle: string;
  startedAt: number;
  /** What would fetch weights not on this machine (the pages' "not cached" reason). */
  weightSources?: WeightSourcesState;
}
