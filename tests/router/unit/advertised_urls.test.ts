/**
 * Issue 26.5: where a token holder may point the router. Link-local and cloud metadata addresses
 * are refused whatever the settings; loopback and private ones only on a local stack (a router
 * listening on loopback) or when SVC_WORKER_ALLOWED_NETWORKS lists them; host names are resolved
 * and judged by what they resolve to. The refusal names the setting.
 */
import assert from "node:assert/strict";
import { CLOSE_CODES } from "@svc/shared/fleet/protocol";
import { checkAdvertisedUrl, type UrlPolicy } from "#router/fleet/advertised_url.ts";
import { isLoopbackListen } from "#router/fleet/addresses.ts";
import { parseCidr } from "#router/fleet/networks.ts";
import { openRogue, registered, registerFrame } from "../helpers/rogue_worker.ts";
import { getJson, startTestRouter } from "../helpers/router.ts";

/** A resolver from a fixed table (no DNS in tests). */
function table(entries: Record<string, string[]>): UrlPolicy["resolve"] {
  return (name) => Promise.resolve(entries[name] ?? []);
}

const DNS = table({
  "gpu-1.example.com": ["203.0.113.7"],
  "internal.example.com": ["10.1.2.3"],
  "rebind.example.com": ["203.0.113.8", "169.254.169.254"],
  "v6meta.example.com": ["fd00:ec2::254"],
});

const PUBLIC_ROUTER: UrlPolicy = {
  allowedNetworks: [],
  localStack: false,
  alsoAllowed: [],
  resolve: DNS,
};
const LOCAL_ROUTER: UrlPolicy = { ...PUBLIC_ROUTER, localStack: true };

const ALWAYS_REFUSED = [
  "http://169.254.169.254",
  "http://169.254.170.2:80",
  "http://2852039166", // 169.254.169.254 as one number: URL parsing normalises it
  "http://0xa9.0xfe.0xa9.0xfe",
  "http://[::ffff:169.254.169.254]",
  "http://[::169.254.169.254]",
  "http://[64:ff9b::a9fe:a9fe]",
  "http://[2002:a9fe:a9fe::1]",
  "http://[fe80::1]:8080",
  "http://[fd00:ec2::254]",
  "http://metadata.google.internal",
  "http://METADATA.google.internal.",
  "http://metadata.goog",
  "http://0.0.0.0:8080",
  "http://100.100.100.200",
  "http://224.0.0.1",
  "http://rebind.example.com",
  "http://v6meta.example.com",
];

Deno.test("advertised URLs: link-local and metadata are refused whatever the settings", async () => {
  const everything: UrlPolicy = {
    ...LOCAL_ROUTER,
    allowedNetworks: [parseCidr("0.0.0.0/0")!, parseCidr("::/0")!],
  };
  for (const policy of [PUBLIC_ROUTER, LOCAL_ROUTER, everything]) {
    for (const url of ALWAYS_REFUSED) {
      const v = await checkAdvertisedUrl(url, policy);
      assert.equal(v.ok, false, url);
      if (!v.ok && !url.includes("example.com")) {
        assert.match(v.reason, /link-local or cloud metadata|SVC_WORKER_ALLOWED_NETWORKS/, url);
      }
    }
  }
});

Deno.test("advertised URLs: loopback and private only on a local stack or when listed", async () => {
  const local = [
    "http://127.0.0.1:22",
    "http://localhost:6379",
    "http://[::1]:8080",
    "https://10.0.0.1:8443",
    "http://192.168.1.5:8080",
    "http://172.20.0.3",
    "http://100.64.0.9",
    "http://[fd12::1]",
    "http://internal.example.com:8080",
  ];
  for (const url of local) {
    const refused = await checkAdvertisedUrl(url, PUBLIC_ROUTER);
    assert.equal(refused.ok, false, url);
    if (!refused.ok) {
      assert.match(refused.reason, /SVC_WORKER_ALLOWED_NETWORKS/, "the refusal names the setting");
    }
    assert.equal((await checkAdvertisedUrl(url, LOCAL_ROUTER)).ok, true, url);
  }
  // Public addresses and names that resolve to them are fine anywhere.
  for (
    const url of ["http://203.0.113.9:8080", "https://gpu-1.example.com", "http://[2001:db8::1]"]
  ) {
    const v = await checkAdvertisedUrl(url, PUBLIC_ROUTER);
    assert.deepEqual(v, { ok: true, url: new URL(url).origin }, url);
  }
  // A name that does not resolve is refused: its address cannot be judged.
  assert.equal((await checkAdvertisedUrl("http://nowhere.example.com", PUBLIC_ROUTER)).ok, false);
  // Listed networks are authoritative: inside is fine, outside (and names) refused.
  const listed: UrlPolicy = { ...PUBLIC_ROUTER, allowedNetworks: [parseCidr("10.0.0.0/8")!] };
  assert.equal((await checkAdvertisedUrl("http://10.9.9.9:8080", listed)).ok, true);
  assert.equal((await checkAdvertisedUrl("http://192.168.1.5", listed)).ok, false);
  assert.equal((await checkAdvertisedUrl("http://internal.example.com", listed)).ok, false);
  // A trusted network (the embedded worker of `deno task start`) passes on a public router.
  const embedded: UrlPolicy = { ...PUBLIC_ROUTER, alsoAllowed: [parseCidr("127.0.0.1/32")!] };
  assert.equal((await checkAdvertisedUrl("http://127.0.0.1:41234", embedded)).ok, true);
  assert.equal((await checkAdvertisedUrl("http://127.0.0.2:41234", embedded)).ok, false);
});

Deno.test("advertised URLs: what counts as a router listening on loopback", () => {
  for (const host of ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"]) {
    assert.ok(isLoopbackListen(host), host);
  }
  for (const host of ["0.0.0.0", "::", "10.0.0.5", "192.168.0.2", "example.com"]) {
    assert.ok(!isLoopbackListen(host), host);
  }
});

Deno.test("advertised URLs: a token holder advertising a metadata address is refused", async () => {
  const r = await startTestRouter({ SVC_MACHINE_PROFILES: "cpu" });
  try {
    for (const url of ["http://169.254.169.254", "http://metadata.google.internal"]) {
      const s = await openRogue(r.url);
      s.send(registerFrame("rogue", url));
      const ev = await s.closed;
      assert.equal(ev.code, CLOSE_CODES.invalidMessage, url);
      const err = s.frames.find((f) => f.type === "error");
      assert.ok(err?.type === "error" && /metadata/.test(err.message), url);
    }
    assert.deepEqual((await getJson(`${r.url}/health`)).body.workers, []);
    // The same router (on loopback: a local stack) accepts a worker on loopback.
    const ok = await openRogue(r.url);
    ok.send(registerFrame("local", "http://127.0.0.1:9"));
    await registered(ok);
    ok.close();
  } finally {
    await r.close();
  }
});
