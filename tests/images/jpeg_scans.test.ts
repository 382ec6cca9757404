/**
 * Counting a JPEG's scans from its markers (issue 23.3): the counts of real files written by
 * sharp, the repeated-scan bomb, and the byte-level cases a walker can get wrong: byte stuffing,
 * restart markers and fill bytes inside scan data, marker bytes inside a segment, junk between
 * segments (which the decoder skips, so a scan hidden after it still counts), truncation.
 */
import assert from "node:assert/strict";
import sharp from "sharp";
import { countJpegScans } from "#worker/images/jpeg_scans.ts";
import { concat, scanBombJpeg } from "./bombs.ts";

const SOI = [0xff, 0xd8];
const EOI = [0xff, 0xd9];
/** A one-component SOS header (length 8) followed by `data` as its entropy-coded bytes. */
const sos = (
  ...data: number[]
) => [0xff, 0xda, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3f, 0x00, ...data];
const bytes = (...parts: number[][]) => new Uint8Array(parts.flat());

async function photo(progressive: boolean): Promise<Uint8Array> {
  const noise = { type: "gaussian" as const, mean: 128, sigma: 40 };
  return new Uint8Array(
    await sharp({ create: { width: 96, height: 64, channels: 3, background: "#000", noise } })
      .jpeg({ progressive })
      .toBuffer(),
  );
}

Deno.test("jpeg scans: a baseline JPEG has one scan, sharp's progressive one has ten", async () => {
  assert.equal(countJpegScans(await photo(false)), 1);
  assert.equal(countJpegScans(await photo(true)), 10);
});

Deno.test("jpeg scans: the repeated-scan bomb counts every repeat; counting stops past the bound", async () => {
  const bomb = await scanBombJpeg(64, 64, 5_000);
  // sharp's ten scans less its five refinement scans, plus the repeats.
  assert.equal(countJpegScans(bomb), 5 + 5_000);
  assert.equal(countJpegScans(bomb, 256), 257);
  // The bomb is a JPEG libvips decodes (no progression warning), not a file it rejects.
  const { info } = await sharp(bomb, { failOn: "error" }).raw().toBuffer({
    resolveWithObject: true,
  });
  assert.deepEqual([info.width, info.height], [64, 64]);
});

Deno.test("jpeg scans: stuffed 0xFF, restarts and fill bytes stay inside a scan", () => {
  // 0xFF00 (after fill bytes too) is data, 0xFFD0-0xFFD7 restart the same scan.
  const one = bytes(SOI, sos(0x12, 0xff, 0x00, 0x34, 0xff, 0xd3, 0x56, 0xff, 0xff, 0x00), EOI);
  assert.equal(countJpegScans(one), 1);
  // A marker after fill bytes ends the scan; the next SOS is a second scan.
  const two = bytes(SOI, sos(0x12, 0xff, 0xff, 0xff), sos(0x34), EOI);
  assert.equal(countJpegScans(two), 2);
  // 0xFFDA inside scan data is a marker, not data: a new scan starts.
  assert.equal(countJpegScans(bytes(SOI, sos(0x01, 0x02), sos(), sos(), EOI)), 3);
});

Deno.test("jpeg scans: marker bytes inside a segment are skipped with it", () => {
  // An APP1 segment of length 10 whose payload spells SOS markers.
  const app = [0xff, 0xe1, 0x00, 0x0a, 0xff, 0xda, 0x00, 0x08, 0xff, 0xda, 0x00, 0x08];
  assert.equal(countJpegScans(bytes(SOI, app, sos(0x55), EOI)), 1);
});

Deno.test("jpeg scans: junk between segments is skipped as the decoder does, so a scan behind it counts", () => {
  // libjpeg resynchronises on the next 0xFF (a warning, not an error): the scan after the junk
  // is decoded, so it must be counted.
  const junk = [0x00, 0x11, 0x22, 0xff, 0x00, 0x33];
  const app = [0xff, 0xe0, 0x00, 0x04, 0x00, 0x00];
  assert.equal(countJpegScans(bytes(SOI, app, junk, sos(0x01), junk, sos(0x02), EOI)), 2);
});

Deno.test("jpeg scans: nothing after EOI counts; truncated files count what they hold", () => {
  assert.equal(countJpegScans(bytes(SOI, sos(0x01), EOI, sos(0x02), sos(0x03))), 1);
  assert.equal(countJpegScans(bytes(SOI, sos(0x01), sos(0x02))), 2);
  // Cut inside a segment's length, or a length that runs past the end.
  assert.equal(countJpegScans(bytes(SOI, sos(0x01), [0xff, 0xda, 0x00])), 1);
  assert.equal(countJpegScans(bytes(SOI, [0xff, 0xe0, 0x40, 0x00, 0x01])), 0);
  assert.equal(countJpegScans(new Uint8Array(SOI)), 0);
  // A length under 2 stops the decoder; the walk stops there too (no endless loop).
  assert.equal(countJpegScans(bytes(SOI, sos(0x01), [0xff, 0xe0, 0x00, 0x00], sos(0x01))), 1);
});

Deno.test("jpeg scans: 10 MiB of scan data is walked quickly", () => {
  // Worst case for the walk: scan data that is all 0xFF00 pairs (one stop per two bytes).
  const data = new Uint8Array(10 * 1024 * 1024);
  for (let i = 0; i < data.length; i += 2) data[i] = 0xff;
  const file = concat([bytes(SOI, sos()), data, bytes(EOI)]);
  const t0 = performance.now();
  assert.equal(countJpegScans(file), 1);
  const ms = performance.now() - t0;
  console.log(`walked 10 MiB of 0xFF00 in ${ms.toFixed(0)} ms`);
  // The bound only catches a walk gone quadratic.
  assert.ok(ms < 5_000, `${ms} ms`);
});
