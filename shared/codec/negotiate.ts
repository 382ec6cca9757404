/** Content negotiation of response bodies (docs/api.md "Content negotiation"). */

import { MediaTypes } from "../headers.ts";

/** The two wire formats. */
export type WireFormat = "msgpack" | "json";

/** The q-values an Accept header gives our two formats: named exactly, or through a wildcard. */
interface Preference {
  msgpack: number | undefined;
  json: number | undefined;
  wildcard: number | undefined;
}

/** Read `type/subtype;q=…` entries; a missing or malformed q is 1, clamped to [0, 1]. */
function preference(accept: string): Preference {
  const pref: Preference = { msgpack: undefined, json: undefined, wildcard: undefined };
  const best = (old: number | undefined, q: number) => old === undefined ? q : Math.max(old, q);
  for (const entry of accept.toLowerCase().split(",")) {
    const [range, ...params] = entry.split(";").map((s) => s.trim());
    let q = 1;
    for (const p of params) {
      const m = /^q\s*=\s*([0-9.]+)$/.exec(p);
      if (m && Number.isFinite(Number(m[1]))) q = Math.min(1, Math.max(0, Number(m[1])));
    }
    if (range === MediaTypes.msgpack || range === MediaTypes.msgpackAlt) {
      pref.msgpack = best(pref.msgpack, q);
    } else if (range === MediaTypes.json) {
      pref.json = best(pref.json, q);
    } else if (range === "*/*" || range === "application/*") {
      pref.wildcard = best(pref.wildcard, q);
    }
  }
  return pref;
}

/**
 * msgpack, the SIE clients' default, unless the client prefers JSON: JSON's q-value is higher
 * than msgpack's, or equal (and above 0) with JSON named and msgpack only reached by a wildcard.
 * So `application/json` alone and `application/msgpack;q=0, application/json` get JSON; a missing
 * Accept, a wildcard, both named alike, or anything else gets msgpack.
 */
export function negotiate(accept: string | null | undefined): WireFormat {
  if (!accept) return "msgpack";
  const p = preference(accept);
  const msgpack = p.msgpack ?? p.wildcard ?? 0;
  const json = p.json ?? p.wildcard ?? 0;
  if (json > msgpack) return "json";
  if (json === msgpack && json > 0 && p.json !== undefined && p.msgpack === undefined) {
    return "json";
  }
  return "msgpack";
}

/** Content-Type header value of each wire format. */
export function contentTypeOf(format: WireFormat): string {
  return format === "json" ? MediaTypes.json : MediaTypes.msgpack;
}
