/** The release version of the whole service (router, worker, clients): one source of truth. */
export const VERSION = "0.1.0";

/** Split a `major.minor.patch` version into numbers. */
export function parseVersion(v: string): [number, number, number] {
  const m = /^(\d+)\.(\d+)\.(\d+)$/.exec(v);
  if (!m) throw new Error(`not a major.minor.patch version: ${v}`);
  return [Number(m[1]), Number(m[2]), Number(m[3])];
}
