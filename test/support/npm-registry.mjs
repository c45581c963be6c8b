// A real npm registry, as small as npm needs (the packument and the tarball), for the packages in
// the directory given: `node npm-registry.mjs DIR`. Each DIR/NAME-VERSION.tgz is served as NAME
// at VERSION. It listens on a free port on 127.0.0.1, writes the port to DIR/port, and appends
// every request's path to DIR/requests.log (so a test sees what reached it, e.g. an exfiltration).
import { createHash } from 'node:crypto';
import { appendFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { join } from 'node:path';

const dir = process.argv[2];
const packages = new Map();
for (const f of readdirSync(dir)) {
  const m = /^(.+)-(\d+\.\d+\.\d+)\.tgz$/.exec(f);
  if (m === null) continue;
  const bytes = readFileSync(join(dir, f));
  const versions = packages.get(m[1]) ?? {};
  versions[m[2]] = { file: f, bytes, integrity: `sha512-${createHash('sha512').update(bytes).digest('base64')}`, shasum: createHash('sha1').update(bytes).digest('hex') };
  packages.set(m[1], versions);
}

const server = createServer((req, res) => {
  const path = decodeURIComponent((req.url ?? '/').split('?')[0]);
  appendFileSync(join(dir, 'requests.log'), `${req.method} ${path}\n`);
  const port = server.address().port;
  const tarball = /^\/([^/]+)\/-\/(.+\.tgz)$/.exec(path);
  if (tarball !== null) {
    const v = Object.values(packages.get(tarball[1]) ?? {}).find((x) => x.file === tarball[2]);
    if (v === undefined) return void res.writeHead(404).end();
    // As the public registry serves tarballs: immutable (npm keeps them in its cache and does not ask again).
    return void res.writeHead(200, { 'content-type': 'application/octet-stream', 'cache-control': 'public, immutable, max-age=31557600' }).end(v.bytes);
  }
  const name = path.slice(1);
  const versions = packages.get(name);
  if (versions === undefined) return void res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"not found"}');
  const doc = {
    name,
    'dist-tags': { latest: Object.keys(versions).sort().at(-1) },
    versions: Object.fromEntries(Object.entries(versions).map(([version, v]) => [version, {
      ...JSON.parse(readFileSync(join(dir, `${name}-${version}.json`), 'utf8')),
      name, version,
      dist: { tarball: `http://127.0.0.1:${port}/${name}/-/${v.file}`, integrity: v.integrity, shasum: v.shasum },
    }])),
  };
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(doc));
});
server.listen(0, '127.0.0.1', () => writeFileSync(join(dir, 'port'), String(server.address().port)));
