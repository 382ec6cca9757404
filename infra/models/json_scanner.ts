/**
 * A streaming JSON scanner for large files: reads the text in chunks and lets a caller walk a
 * known structure token by token, so a 300 MB file never becomes one string or one object tree.
 * Reads are synchronous over a buffered window; call `ensure(n)` before reading a value that is
 * at most `n` characters long.
 */

/** Characters kept ready before reading one small value (a word, a number, a vector entry). */
export const WINDOW = 64 * 1024;

/** Pulls JSON tokens out of a text stream. */
export class JsonScanner {
  readonly #reader: ReadableStreamDefaultReader<string>;
  readonly #source: string;
  #buf = "";
  #pos = 0;
  #consumed = 0;
  #done = false;

  /** Scan `stream`; `source` names it in error messages. */
  constructor(stream: ReadableStream<string>, source: string) {
    this.#reader = stream.getReader();
    this.#source = source;
  }

  /** Open a UTF-8 file for scanning. */
  static async open(path: string): Promise<JsonScanner> {
    const file = await Deno.open(path, { read: true });
    return new JsonScanner(file.readable.pipeThrough(new TextDecoderStream()), path);
  }

  /** Make at least `n` characters available (fewer only at the end of the stream). */
  async ensure(n: number = WINDOW): Promise<void> {
    while (!this.#done && this.#buf.length - this.#pos < n) {
      const { value, done } = await this.#reader.read();
      if (done) {
        this.#done = true;
        break;
      }
      this.#consumed += this.#pos;
      this.#buf = this.#buf.slice(this.#pos) + value;
      this.#pos = 0;
    }
  }

  /** Stop reading (also releases the file). */
  async close(): Promise<void> {
    await this.#reader.cancel().catch(() => {});
  }

  /** The next non-whitespace character without consuming it ("" at the end of the buffer). */
  peek(): string {
    this.#skipWs();
    return this.#buf[this.#pos] ?? "";
  }

  /** Consume the next non-whitespace character, which must be `ch`. */
  expect(ch: string): void {
    const got = this.peek();
    if (got !== ch) this.fail(`expected '${ch}' but found ${got ? `'${got}'` : "the end"}`);
    this.#pos++;
  }

  /** Consume `ch` if it is next; true when it was. */
  accept(ch: string): boolean {
    if (this.peek() !== ch) return false;
    this.#pos++;
    return true;
  }

  /** Read a string token. */
  readString(): string {
    this.expect('"');
    const start = this.#pos;
    const buf = this.#buf;
    let i = start;
    while (i < buf.length && buf[i] !== '"' && buf[i] !== "\\") i++;
    if (buf[i] === '"') {
      this.#pos = i + 1;
      return buf.slice(start, i);
    }
    // Escapes are rare (a few punctuation words): find the real end, let JSON.parse decode.
    while (i < buf.length && buf[i] !== '"') i += buf[i] === "\\" ? 2 : 1;
    if (i >= buf.length) this.fail("unterminated string");
    this.#pos = i + 1;
    return JSON.parse(buf.slice(start - 1, i + 1)) as string;
  }

  /** Read a number token (parsed exactly as JSON.parse would). */
  readNumber(): number {
    this.#skipWs();
    const buf = this.#buf;
    const start = this.#pos;
    let i = start;
    while (i < buf.length && isNumberChar(buf.charCodeAt(i))) i++;
    const value = Number(buf.slice(start, i));
    if (i === start || Number.isNaN(value)) this.fail("expected a number");
    this.#pos = i;
    return value;
  }

  /** Skip one value of any size and shape (refills the buffer as it goes). */
  async skipValue(): Promise<void> {
    let depth = 0;
    do {
      await this.ensure();
      const ch = this.peek();
      if (ch === "{" || ch === "[") {
        this.#pos++;
        depth++;
      } else if (ch === "}" || ch === "]") {
        this.#pos++;
        depth--;
      } else if (ch === "," || ch === ":") {
        this.#pos++;
      } else if (ch === '"') {
        this.readString();
      } else if (ch === "t" || ch === "f" || ch === "n") {
        this.#readLiteral();
      } else {
        this.readNumber();
      }
    } while (depth > 0);
  }

  /** Throw a parse error that names the source and the character offset. */
  fail(message: string): never {
    throw new Error(`${this.#source}: ${message} at character ${this.#consumed + this.#pos}`);
  }

  #readLiteral(): void {
    for (const word of ["true", "false", "null"]) {
      if (this.#buf.startsWith(word, this.#pos)) {
        this.#pos += word.length;
        return;
      }
    }
    this.fail("unexpected token");
  }

  #skipWs(): void {
    const buf = this.#buf;
    let i = this.#pos;
    while (i < buf.length && isWs(buf.charCodeAt(i))) i++;
    this.#pos = i;
  }
}

function isWs(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function isNumberChar(c: number): boolean {
  // 0-9 . - + e E
  return (c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x2d || c === 0x2b || c === 0x65 ||
    c === 0x45;
}
