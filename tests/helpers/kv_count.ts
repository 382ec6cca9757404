/**
 * A Deno.Kv that counts what it is asked: reads (get, getMany, list calls and the entries they
 * return), commits (atomic and set/delete) and watches. For tests and the KV bench of
 * docs/fleet.md ("Several routers").
 */

/** Operations seen so far. */
export interface KvCounts {
  gets: number;
  lists: number;
  listed: number;
  commits: number;
  /** Mutations in those commits (set, delete, sum, ...). */
  mutations: number;
  watches: number;
}

/** A fresh zeroed count. */
export function zeroCounts(): KvCounts {
  return { gets: 0, lists: 0, listed: 0, commits: 0, mutations: 0, watches: 0 };
}

/** `kv` wrapped: every call goes through, counted into the returned `counts`. */
export function countingKv(kv: Deno.Kv): { kv: Deno.Kv; counts: KvCounts } {
  const counts = zeroCounts();
  const atomicOf = (op: Deno.AtomicOperation): Deno.AtomicOperation => {
    const proxy: Deno.AtomicOperation = new Proxy(op, {
      get(t, p) {
        const v = Reflect.get(t, p, t);
        if (typeof v !== "function") return v;
        if (p === "commit") {
          return () => {
            counts.commits++;
            return v.call(t);
          };
        }
        return (...args: unknown[]) => {
          if (p !== "check") counts.mutations++;
          v.apply(t, args);
          return proxy;
        };
      },
    });
    return proxy;
  };
  const wrapped = new Proxy(kv, {
    get(t, p) {
      const v = Reflect.get(t, p, t);
      if (typeof v !== "function") return v;
      switch (p) {
        case "get":
        case "getMany":
          return (...a: unknown[]) => {
            counts.gets++;
            return v.apply(t, a);
          };
        case "set":
        case "delete":
          return (...a: unknown[]) => {
            counts.commits++;
            counts.mutations++;
            return v.apply(t, a);
          };
        case "watch":
          return (...a: unknown[]) => {
            counts.watches++;
            return v.apply(t, a);
          };
        case "atomic":
          return () => atomicOf(v.call(t));
        case "list":
          return (...a: unknown[]) => {
            counts.lists++;
            const it = v.apply(t, a) as Deno.KvListIterator<unknown>;
            return (async function* () {
              for await (const e of it) {
                counts.listed++;
                yield e;
              }
            })();
          };
        default:
          return v.bind(t);
      }
    },
  });
  return { kv: wrapped, counts };
}
