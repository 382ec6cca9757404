/** Settings only `deno task start` reads (kept apart from start_embedded.ts: no heavy imports). */
import {
  int,
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
};

/** Schema of the settings `deno task start` reads besides the router's and the worker's. */
export const START_SCHEMA: SettingsSchema<{ SVC_WORKER_PORT: number }> = settingsSchema(
  START_FIELDS,
);

/** The `deno task start` section of the configuration reference (README). */
export const START_REFERENCE: readonly ReferenceSection[] = [{ id: "start", fields: START_FIELDS }];
