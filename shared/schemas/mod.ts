/** Schemas and types of every API resource. */

export * from "./common.ts";
export * from "./item.ts";
export * from "./timing.ts";
export * from "./encode.ts";
export * from "./score.ts";
export * from "./extract.ts";
export * from "./error_body.ts";
export * from "./models.ts";
export * from "./status.ts";
export * from "./openai.ts";
export * from "./cohere.ts";
export * from "./router.ts";
