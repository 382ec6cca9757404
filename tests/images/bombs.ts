/**
 * Images that are cheap to send and costly to decode (issue 23), built here in milliseconds:
 * a progressive JPEG with many repeated scans, a PNG of one pixel by millions whose image data
 * is a few kilobytes of deflate, PNG chunks by hand, and an animated WebP.
 */
import zlib from "node:zlib";
import sharp from "sharp";

/** One JPEG marker segment (its scan data included for SOS) as offsets into the file. */
interface Segment {
  marker: number;
  start: number;
  end: number;
}

/** The file's segments up to EOI; scan data is cut at the first marker that is not a restart. */
function jpegSegments(b: Uint8Array): Segment[] {
  const out: Segment[] = [];
  let i = 2;
  while (i < b.length) {
    const marker = b[i + 1];
    if (marker === 0xd9) break;
    let end = i + 2 + ((b[i + 2] << 8) | b[i + 3]);
    if (marker === 0xda) {
      while (!(b[end] === 0xff && b[end + 1] !== 0 && (b[end + 1] & 0xf8) !== 0xd0)) end++;
    }
    out.push({ marker, start: i, end });
    i = end;
  }
  return out;
}

/** Concatenate byte arrays. */
export function concat(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * A flat grey progressive JPEG of `width`×`height` whose last spectral scan is repeated `repeats`
 * more times. Successive approximation is taken out (every scan Ah=0, Al=0, refinement scans
 * dropped) so that the repeats are a consistent progression libjpeg decodes without a warning;
 * each repeat is a few bytes (runs of empty blocks) and costs the decoder a pass over the image.
 */
export async function scanBombJpeg(
  width: number,
  height: number,
  repeats: number,
): Promise<Uint8Array<ArrayBuffer>> {
  const base = new Uint8Array(
    await sharp({ create: { width, height, channels: 3, background: "#808080" } })
      .jpeg({ progressive: true })
      .toBuffer(),
  );
  const parts: Uint8Array[] = [base.subarray(0, 2)];
  let lastAc: Uint8Array | undefined;
  for (const s of jpegSegments(base)) {
    const bytes = base.slice(s.start, s.end);
    if (s.marker !== 0xda) {
      parts.push(bytes);
      continue;
    }
    const components = bytes[4];
    const approx = 4 + 1 + 2 * components + 2;
    if (bytes[approx] >> 4 !== 0) continue; // a refinement scan
    bytes[approx] = 0;
    parts.push(bytes);
    if (bytes[4 + 1 + 2 * components] > 0) lastAc = bytes;
  }
  if (!lastAc) throw new Error("sharp wrote no AC scan");
  for (let k = 0; k < repeats; k++) parts.push(lastAc);
  parts.push(new Uint8Array([0xff, 0xd9]));
  return concat(parts);
}

const CRC_TABLE = new Uint32Array(256).map((_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** One PNG chunk: length, type, data, CRC. */
export function pngChunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  out.set(new TextEncoder().encode(type), 4);
  out.set(data, 8);
  view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

/**
 * A zlib stream of `n` zero bytes, made of one sync-flushed deflate block of 1 MiB repeated (every
 * block ends on a byte boundary, and repeating zeros keeps every back-reference valid): a
 * 160 MB stream costs about 160 KB and no time to build.
 */
export function zlibZeros(n: number): Uint8Array {
  const unit = 1 << 20;
  const flush = { level: 9, finishFlush: zlib.constants.Z_SYNC_FLUSH };
  const block = new Uint8Array(zlib.deflateRawSync(new Uint8Array(unit), flush));
  const parts: Uint8Array[] = [new Uint8Array([0x78, 0xda])];
  let left = n;
  for (; left >= unit; left -= unit) parts.push(block);
  if (left > 0) parts.push(new Uint8Array(zlib.deflateRawSync(new Uint8Array(left), flush)));
  // A final empty fixed-Huffman block, then the Adler-32 of n zeros (a = 1, b = n mod 65521).
  parts.push(new Uint8Array([0x03, 0x00]));
  const adler = new Uint8Array(4);
  new DataView(adler.buffer).setUint32(0, ((n % 65521) * 65536 + 1) >>> 0);
  parts.push(adler);
  return concat(parts);
}

const PNG_SIGNATURE = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/**
 * A black 8-bit RGB PNG of `width`×`height`, built by hand (sharp takes seconds to write tall
 * images), with `extra` chunks before the image data.
 */
export function blackPng(
  width: number,
  height: number,
  extra: readonly Uint8Array[] = [],
): Uint8Array<ArrayBuffer> {
  const header = new Uint8Array(13);
  const view = new DataView(header.buffer);
  view.setUint32(0, width);
  view.setUint32(4, height);
  header[8] = 8; // bit depth
  header[9] = 2; // RGB
  return concat([
    PNG_SIGNATURE,
    pngChunk("IHDR", header),
    ...extra,
    pngChunk("IDAT", zlibZeros(height * (1 + 3 * width))),
    pngChunk("IEND", new Uint8Array(0)),
  ]);
}

/** An animated WebP whose frames are flat `colours`, each `width`×`height`. */
export async function animatedWebp(
  width: number,
  height: number,
  colours: readonly string[],
): Promise<Uint8Array<ArrayBuffer>> {
  const frames = await Promise.all(
    colours.map((background) =>
      sharp({ create: { width, height, channels: 3, background } }).png().toBuffer()
    ),
  );
  return new Uint8Array(await sharp(frames, { join: { animated: true } }).webp().toBuffer());
}
