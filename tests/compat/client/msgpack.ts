/**
 * A deliberately small msgpack reader and writer for the compatibility client, written from the
 * msgpack specification and the wire rules (docs/api.md, "Arrays on the wire"), sharing nothing
 * with the service's codec: if both were wrong the same way, these tests would still notice.
 *
 * Reading is strict: a map whose keys are all `bin` must be the numpy 5-entry map (it becomes a
 * {@link WireArray}); any other map must have `str` keys (it becomes a plain object). Extension
 * types never appear in responses and are refused.
 */

/** A numpy-style array as it came off the wire: dtype string, shape, raw little-endian bytes. */
export interface WireArray {
  readonly wireArray: true;
  dtype: string;
  shape: number[];
  data: Uint8Array;
}

/** The order and names of the numpy map's keys. */
const NUMPY_KEYS = ["nd", "type", "kind", "shape", "data"];

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** Decode one msgpack value that must fill `bytes` exactly. */
export function unpack(bytes: Uint8Array): unknown {
  const r = new Reader(bytes);
  const v = r.value();
  if (r.at !== bytes.length) throw new Error(`${bytes.length - r.at} bytes after the value`);
  return v;
}

/** A raw `bin` value inside a map being read (only numpy keys and `kind`/`data` values). */
class Bin {
  constructor(readonly bytes: Uint8Array) {}
}

class Reader {
  at = 0;
  readonly #view: DataView;

  constructor(readonly bytes: Uint8Array) {
    this.#view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  value(): unknown {
    const raw = this.#raw();
    return raw instanceof Bin ? raw.bytes : raw;
  }

  #need(n: number): void {
    if (this.at + n > this.bytes.length) throw new Error(`truncated at byte ${this.at}`);
  }

  #u8(): number {
    this.#need(1);
    return this.bytes[this.at++];
  }

  #uint(n: 1 | 2 | 4 | 8): number {
    this.#need(n);
    const v = this.#view;
    const at = this.at;
    this.at += n;
    if (n === 1) return v.getUint8(at);
    if (n === 2) return v.getUint16(at);
    if (n === 4) return v.getUint32(at);
    return Number(v.getBigUint64(at));
  }

  #int(n: 1 | 2 | 4 | 8): number {
    this.#need(n);
    const v = this.#view;
    const at = this.at;
    this.at += n;
    if (n === 1) return v.getInt8(at);
    if (n === 2) return v.getInt16(at);
    if (n === 4) return v.getInt32(at);
    return Number(v.getBigInt64(at));
  }

  #take(n: number): Uint8Array {
    this.#need(n);
    const out = this.bytes.slice(this.at, this.at + n);
    this.at += n;
    return out;
  }

  #raw(): unknown {
    const b = this.#u8();
    if (b <= 0x7f) return b;
    if (b >= 0xe0) return b - 0x100;
    if (b >= 0x80 && b <= 0x8f) return this.#map(b & 0x0f);
    if (b >= 0x90 && b <= 0x9f) return this.#array(b & 0x0f);
    if (b >= 0xa0 && b <= 0xbf) return utf8.decode(this.#take(b & 0x1f));
    switch (b) {
      case 0xc0:
        return null;
      case 0xc2:
        return false;
      case 0xc3:
        return true;
      case 0xc4:
        return new Bin(this.#take(this.#uint(1)));
      case 0xc5:
        return new Bin(this.#take(this.#uint(2)));
      case 0xc6:
        return new Bin(this.#take(this.#uint(4)));
      case 0xca: {
        this.#need(4);
        const x = this.#view.getFloat32(this.at);
        this.at += 4;
        return x;
      }
      case 0xcb: {
        this.#need(8);
        const x = this.#view.getFloat64(this.at);
        this.at += 8;
        return x;
      }
      case 0xcc:
        return this.#uint(1);
      case 0xcd:
        return this.#uint(2);
      case 0xce:
        return this.#uint(4);
      case 0xcf:
        return this.#uint(8);
      case 0xd0:
        return this.#int(1);
      case 0xd1:
        return this.#int(2);
      case 0xd2:
        return this.#int(4);
      case 0xd3:
        return this.#int(8);
      case 0xd9:
        return utf8.decode(this.#take(this.#uint(1)));
      case 0xda:
        return utf8.decode(this.#take(this.#uint(2)));
      case 0xdb:
        return utf8.decode(this.#take(this.#uint(4)));
      case 0xdc:
        return this.#array(this.#uint(2));
      case 0xdd:
        return this.#array(this.#uint(4));
      case 0xde:
        return this.#map(this.#uint(2));
      case 0xdf:
        return this.#map(this.#uint(4));
    }
    throw new Error(`unexpected msgpack type byte 0x${b.toString(16)} at ${this.at - 1}`);
  }

  #array(n: number): unknown[] {
    const out: unknown[] = [];
    for (let i = 0; i < n; i++) out.push(this.value());
    return out;
  }

  #map(n: number): unknown {
    const keys: unknown[] = [];
    const values: unknown[] = [];
    for (let i = 0; i < n; i++) {
      keys.push(this.#raw());
      values.push(this.#raw());
    }
    if (n > 0 && keys.every((k) => k instanceof Bin)) return numpyMap(keys as Bin[], values);
    const out: Record<string, unknown> = {};
    keys.forEach((k, i) => {
      if (typeof k !== "string") throw new Error(`map key of type ${typeof k}: only str or bin`);
      const v = values[i];
      Object.defineProperty(out, k, {
        value: v instanceof Bin ? v.bytes : v,
        enumerable: true,
        writable: true,
      });
    });
    return out;
  }
}

/** Check the numpy map against the wire rules and turn it into a WireArray. */
function numpyMap(keys: Bin[], values: unknown[]): WireArray {
  const names = keys.map((k) => utf8.decode(k.bytes));
  if (names.join() !== NUMPY_KEYS.join()) {
    throw new Error(`numpy map keys ${names.join(",")}, expected ${NUMPY_KEYS.join(",")}`);
  }
  const [nd, type, kind, shape, data] = values;
  if (nd !== true) throw new Error("numpy map: nd is not true");
  if (typeof type !== "string") throw new Error("numpy map: type is not a str");
  if (!(kind instanceof Bin) || kind.bytes.length !== 0) {
    throw new Error("numpy map: kind is not an empty bin");
  }
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
    throw new Error("numpy map: shape is not a list of sizes");
  }
  if (!(data instanceof Bin)) throw new Error("numpy map: data is not a bin");
  return { wireArray: true, dtype: type, shape: shape as number[], data: data.bytes };
}

/** True for a value decoded from a numpy map. */
export function isWireArray(v: unknown): v is WireArray {
  return typeof v === "object" && v !== null && (v as WireArray).wireArray === true;
}

/**
 * Encode a request body: null, booleans, numbers, strings, bytes (bin: image data), arrays and
 * str-keyed objects.
 */
export function pack(value: unknown): Uint8Array<ArrayBuffer> {
  const out: number[] = [];
  write(out, value);
  return Uint8Array.from(out);
}

function be(out: number[], v: number, bytes: number): void {
  for (let i = bytes - 1; i >= 0; i--) out.push(Math.floor(v / 2 ** (8 * i)) & 0xff);
}

function header(
  out: number[],
  n: number,
  fix: number,
  fixMax: number,
  c8: number | null,
  c16: number,
  c32: number,
): void {
  if (n <= fixMax) out.push(fix | n);
  else if (c8 !== null && n <= 0xff) out.push(c8, n);
  else if (n <= 0xffff) {
    out.push(c16);
    be(out, n, 2);
  } else {
    out.push(c32);
    be(out, n, 4);
  }
}

function write(out: number[], v: unknown): void {
  if (v === null || v === undefined) out.push(0xc0);
  else if (v === true) out.push(0xc3);
  else if (v === false) out.push(0xc2);
  else if (typeof v === "number") {
    if (Number.isInteger(v) && v >= 0 && v <= 0xffffffff) {
      if (v <= 0x7f) out.push(v);
      else if (v <= 0xff) out.push(0xcc, v);
      else if (v <= 0xffff) {
        out.push(0xcd);
        be(out, v, 2);
      } else {
        out.push(0xce);
        be(out, v, 4);
      }
    } else if (Number.isInteger(v) && v < 0 && v >= -32) out.push(v + 0x100);
    else {
      const b = new Uint8Array(8);
      new DataView(b.buffer).setFloat64(0, v);
      out.push(0xcb, ...b);
    }
  } else if (typeof v === "string") {
    const b = new TextEncoder().encode(v);
    header(out, b.length, 0xa0, 31, 0xd9, 0xda, 0xdb);
    out.push(...b);
  } else if (v instanceof Uint8Array) {
    header(out, v.length, 0xc4, -1, 0xc4, 0xc5, 0xc6);
    for (const b of v) out.push(b);
  } else if (Array.isArray(v)) {
    header(out, v.length, 0x90, 15, null, 0xdc, 0xdd);
    for (const x of v) write(out, x);
  } else if (typeof v === "object") {
    const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined);
    header(out, entries.length, 0x80, 15, null, 0xde, 0xdf);
    for (const [k, x] of entries) {
      write(out, k);
      write(out, x);
    }
  } else throw new Error(`cannot pack a ${typeof v}`);
}
