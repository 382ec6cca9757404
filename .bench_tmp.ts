function bench(name: string, f: () => unknown, iters: number) {
  for (let i = 0; i < 2000; i++) f();
  const t = performance.now();
  for (let i = 0; i < iters; i++) f();
  console.log(name.padEnd(40), ((performance.now() - t) / iters * 1000).toFixed(1), "µs");
}
const obj = { items: Array.from({ length: 32 }, (_, i) => ({ id: "d" + i, text: "The quick brown fox jumps over the lazy dog. ".repeat(20) })), params: { output_types: ["dense"] } };
const js = new TextEncoder().encode(JSON.stringify(obj));
const fatal = new TextDecoder("utf-8", { fatal: true });
const lax = new TextDecoder("utf-8");
bench("fatal module-level", () => fatal.decode(js), 5000);
bench("lax module-level", () => lax.decode(js), 5000);
bench("fatal module-level", () => fatal.decode(js), 5000);
const nonAscii = new TextEncoder().encode(JSON.stringify({ t: "héllo wörld ".repeat(2000) }));
bench("fatal non-ascii", () => fatal.decode(nonAscii), 5000);
bench("lax non-ascii", () => lax.decode(nonAscii), 5000);
