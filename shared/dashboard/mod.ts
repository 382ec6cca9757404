/** Pieces both live pages share: page response, live-socket script, status broadcaster. */

export * from "./page_kit.ts";
export * from "./broadcaster.ts";
