/**
 * Writes the golden msgpack files of tests/shared/golden/ from hand-assembled hex, independent of
 * the encoder under test. Run once (`deno run -P=tests tests/shared/golden/make_golden.ts`); the
 * files are committed and `golden.test.ts` asserts the encoder reproduces them byte for byte.
 *
 * Every numpy map follows docs/api.md: `85` (map of 5) | bin "nd" `c4026e64` → `c3` (true) |
 * bin "type" `c40474797065` → str dtype `a3` + 3 ASCII bytes | bin "kind" `c4046b696e64` → empty
 * bin `c400` | bin "shape" `c4057368617065` → array of ints | bin "data" `c40464617461` → bin8
 * `c4 <len>` + raw little-endian element bytes.
 */

/** Hex of a fixstr holding ASCII `s` (length < 32): `a0|len` then the bytes. */
function str(s: string): string {
  return (0xa0 | s.length).toString(16) + [...s].map((c) => c.charCodeAt(0).toString(16)).join("");
}

/** The numpy map for `dtype`, a shape given as msgpack hex, and data bytes as hex. */
function nd(dtype: string, shapeHex: string, dataHex: string): string {
  const len = (dataHex.length / 2).toString(16).padStart(2, "0");
  return "85" + "c4026e64" + "c3" + "c40474797065" + str(dtype) + "c4046b696e64" + "c400" +
    "c4057368617065" + shapeHex + "c40464617461" + "c4" + len + dataHex;
}

export const GOLDEN: Record<string, string> = {
  // docs/api.md's example, float32 [1.0, -2.0, 0.5]: IEEE bits 3f800000, c0000000, 3f000000,
  // written little-endian. Must equal the hex printed in docs/api.md.
  "f32_wire_example.msgpack": nd("<f4", "9103", "0000803f" + "000000c0" + "0000003f"),

  // float16 of [1.0, -2.0, 0.5, 65504]: half bits 3c00 (exp 15, mant 0), c000 (sign, exp 16),
  // 3800 (exp 14), 7bff (largest finite half: exp 30, mant 0x3ff), little-endian.
  "f16.msgpack": nd("<f2", "9104", "003c" + "00c0" + "0038" + "ff7b"),

  // int8 of [0.5, -1.0, 0.25, 0.0]: max|x| = 1, so x*127 = 63.5 → 64 (half to even),
  // -127 → 0x81, 31.75 → 32 → 0x20, 0 → 0x00.
  "i8.msgpack": nd("|i1", "9104", "40" + "81" + "20" + "00"),

  // int8 at exact halves, where half-to-even differs from Math.round: [254, 125, -125, 127,
  // -127, 1, 3, 0], max|x| = 254, so x / 254 * 127 in float32 is 127, 62.5, -62.5, 63.5, -63.5,
  // 0.5, 1.5, 0 → 127 (7f), 62 (3e), -62 (c2), 64 (40), -64 (c0), 0, 2, 0. Math.round would give
  // 63, -62, 64, -63, 1, 2. (numpy 2.4: np.round(v / np.abs(v).max() * 127) gives the same.)
  "i8_half_even.msgpack": nd("|i1", "9108", "7f" + "3e" + "c2" + "40" + "c0" + "00" + "02" + "00"),

  // uint8 at exact halves: [0, 1, 3, 5, 7, 510, 255, 509], min 0, max 510, so
  // (x - 0) / 510 * 255 in float32 is 0, 0.5, 1.5, 2.5, 3.5, 255, 127.5, 254.5 → 0, 0, 2, 2, 4,
  // 255 (ff), 128 (80), 254 (fe). Math.round would give 1, 2, 3, 4, 128, 255 for the halves.
  // (numpy 2.4: np.round((v - v.min()) / (v.max() - v.min()) * 255) gives the same.)
  "u8_half_even.msgpack": nd("|u1", "9108", "00" + "00" + "02" + "02" + "04" + "ff" + "80" + "fe"),

  // uint8 of a constant vector [0.25, 0.25, 0.25]: max = min, every element is 128 (docs/api.md).
  "u8_constant.msgpack": nd("|u1", "9103", "80" + "80" + "80"),

  // uint8 per token row of a 2 × 3 multi-vector [[0, 1, 2], [5, 5, 5]]: row 0 (min 0, max 2)
  // → 0, 127.5 → 128 (80), 255 (ff); row 1 is constant → 80 80 80. Shape [2, 3] = 92 02 03.
  "u8_2d.msgpack": nd("|u1", "920203", "00" + "80" + "ff" + "80" + "80" + "80"),

  // binary of 10 dims [0.3, -1, 2, 0, 0.5, -3, 4, 1, -1, 2]: bits x>0 = 1010 1011 | 01 + six
  // zero pad bits → 0xab, 0x40. The shape is the packed length, 2. `ubinary` sends these same
  // bytes.
  "binary.msgpack": nd("|u1", "9102", "ab" + "40"),

  // int32 sparse indices [0, 7, 30521, -1]: 30521 = 0x7739 → 39770000; -1 → ffffffff.
  "i32.msgpack": nd("<i4", "9104", "00000000" + "07000000" + "39770000" + "ffffffff"),

  // 2-D float32 [[1,2,3],[4,5,6]]: one map, shape [2, 3] = 92 02 03, 24 data bytes in C order
  // (1.0=3f800000, 2.0=40000000, 3.0=40400000, 4.0=40800000, 5.0=40a00000, 6.0=40c00000).
  "f32_2d.msgpack": nd(
    "<f4",
    "920203",
    "0000803f" + "00000040" + "00004040" + "00008040" + "0000a040" + "0000c040",
  ),

  // A whole encode response: str keys, int/float/null scalars, one dense vector (the docs/api.md
  // example). {model:"m", items:[{id:"a", dense:{dims:3, dtype:"float32", values:…}}],
  // timing:{total_ms:1.5, queue_ms:0, tokenization_ms:0.25, inference_ms:1, postprocessing_ms:null}}
  // 1.5 = float64 3ff8000000000000, 0.25 = 3fd0000000000000 (cb = float64); integral numbers
  // take the smallest int form (00, 01); null is c0.
  "encode_response.msgpack": "83" +
    str("model") + str("m") +
    str("items") + "91" +
    "82" + str("id") + str("a") +
    str("dense") + "83" + str("dims") + "03" + str("dtype") + str("float32") + str("values") +
    nd("<f4", "9103", "0000803f000000c00000003f") +
    str("timing") + "85" +
    str("total_ms") + "cb3ff8000000000000" +
    str("queue_ms") + "00" +
    str("tokenization_ms") + "cb3fd0000000000000" +
    str("inference_ms") + "01" +
    str("postprocessing_ms") + "c0",
};

/** Bytes of a hex string. */
export function fromHex(hex: string): Uint8Array {
  return Uint8Array.from(hex.match(/../g) ?? [], (h) => parseInt(h, 16));
}

if (import.meta.main) {
  const dir = new URL(".", import.meta.url);
  for (const [name, hex] of Object.entries(GOLDEN)) {
    await Deno.writeFile(new URL(name, dir), fromHex(hex));
    console.log(`wrote ${name} (${hex.length / 2} bytes)`);
  }
}
