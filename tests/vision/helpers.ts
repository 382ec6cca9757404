/** Shared pieces of the vision tests: test pictures made by sharp, msgpack requests, nd arrays. */
import sharp from "sharp";
import { Packr } from "msgpackr/pack";
import { ensureFixtures } from "@svc/fixture-models";
import type { Json } from "../worker/harness.ts";
import { decodeMsgpackView } from "../worker/msgpack_view.ts";
import { type ModelConfig, parseModelConfig } from "@svc/shared/catalog/schema";

const packr = new Packr({ useRecords: false });

/** An encoded picture: a diagonal gradient with a coloured disc, `format` bytes by sharp. */
export async function picture(
  width: number,
  height: number,
  format: "jpeg" | "png" | "webp",
  hue = 0,
): Promise<Uint8Array> {
  const data = new Uint8Array(width * height * 3);
  const cx = width * (0.3 + 0.4 * ((hue % 7) / 7));
  const cy = height / 2;
  const r = Math.min(width, height) / 4;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3;
      const inside = (x - cx) ** 2 + (y - cy) ** 2 < r * r;
      data[i] = inside ? (200 + hue * 37) % 256 : Math.round((x * 255) / width);
      data[i + 1] = inside ? (40 + hue * 91) % 256 : Math.round((y * 255) / height);
      data[i + 2] = inside ? (90 + hue * 53) % 256 : 128;
    }
  }
  const img = sharp(data, { raw: { width, height, channels: 3 } });
  const out = format === "jpeg"
    ? img.jpeg({ quality: 92 })
    : format === "png"
    ? img.png()
    : img.webp({ quality: 90 });
  return new Uint8Array(await out.toBuffer());
}

/** Base64 of bytes (JSON requests carry image bytes this way). */
export function base64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}

/** POST a msgpack body and decode the msgpack (or JSON error) answer. */
export async function postMsgpack(
  url: string,
  body: unknown,
): Promise<{ status: number; headers: Headers; body: Json }> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/msgpack" },
    body: new Uint8Array(packr.pack(body)),
  });
  const bytes = new Uint8Array(await res.arrayBuffer());
  const type = res.headers.get("content-type") ?? "";
  const parsed = type.includes("msgpack")
    ? decodeMsgpackView(bytes)
    : JSON.parse(new TextDecoder().decode(bytes));
  return { status: res.status, headers: res.headers, body: parsed };
}

/** The float32 values of a numpy-style map from a msgpack answer. */
export function ndFloat32(nd: Json): Float32Array {
  const data = nd.data as Uint8Array;
  return new Float32Array(data.slice().buffer);
}

/** The catalog entry of a fixture as the worker reads it. */
export async function fixtureConfig(name: string): Promise<ModelConfig> {
  const fx = await ensureFixtures();
  return parseModelConfig(JSON.parse(await Deno.readTextFile(`${fx}/models/${name}.json`)), name);
}

/** Path of a fixture file in the cluster cache. */
export async function fixtureFile(name: string, path: string): Promise<string> {
  return `${await ensureFixtures()}/cache/fixture/${name}/${path}`;
}

/** L2-normalised copy. */
export function l2(v: ArrayLike<number>): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i] * v[i];
  const n = Math.sqrt(s) || 1;
  return Float32Array.from(v, (x) => x / n);
}
