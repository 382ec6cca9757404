/** Settings: field helpers, the per-process schema, unknown-variable warnings, the reference. */
export * from "./fields.ts";
export * from "./schema.ts";
export * from "./common.ts";
export * from "./unknown.ts";
export * from "./reference.ts";
export * from "./help.ts";
