/** The model catalog: entry schema, the built-in entries, served names and bundles. */

export * from "./schema.ts";
export * from "./builtin.ts";
export * from "./served_names.ts";
