// Bundles the web UI (src/web, Preact + htm) into dist/web: hashed file names, an index.html that
// names them, and the sizes and time printed. Fails when the bundle passes its gzip budget or
// holds an absolute URL (the page loads nothing from anywhere but its own server).
import { build } from 'esbuild';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

const BUDGET_GZIP_BYTES = 80 * 1024;
const XML_NAMESPACES = new Set([
  'http://www.w3.org/2000/svg',
  'http://www.w3.org/1999/xhtml',
  'http://www.w3.org/1998/Math/MathML',
  'http://www.w3.org/1999/xlink',
]);
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(root, 'dist', 'web');

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const started = performance.now();
const result = await build({
  absWorkingDir: root,
  entryPoints: { app: 'src/web/main.ts', style: 'src/web/style.css' },
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  outdir: out,
  entryNames: '[name]-[hash]',
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
});
const esbuildMs = performance.now() - started;

const files = Object.keys(result.metafile.outputs).map((p) => basename(p));
const script = files.find((f) => f.startsWith('app-') && f.endsWith('.js'));
const style = files.find((f) => f.startsWith('style-') && f.endsWith('.css'));
if (!script || !style) throw new Error(`build-web: esbuild wrote ${files.join(', ')}, expected app-*.js and style-*.css`);

const favicon = readFileSync(join(root, 'src', 'web', 'favicon.svg'));
writeFileSync(join(out, 'favicon.svg'), favicon);
writeFileSync(
  join(out, 'index.html'),
  `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>jobq dashboard</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/${style}">
<script type="module" src="/${script}"></script>
</head>
<body>
<noscript>The jobq dashboard needs JavaScript.</noscript>
</body>
</html>
`,
);

let raw = 0;
let gzip = 0;
for (const name of [script, style, 'index.html', 'favicon.svg']) {
  const body = readFileSync(join(out, name));
  raw += body.length;
  gzip += gzipSync(body, { level: 9 }).length;
  // XML namespace names (SVG, and the XHTML and MathML ones Preact creates elements in) are names,
  // never requested: every other absolute URL is a mistake.
  const urls = body.toString('utf8').match(/\b(?:https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}[^\s"'`)]*/gi) ?? [];
  const foreign = urls.filter((u) => !XML_NAMESPACES.has(u));
  if (foreign.length > 0) throw new Error(`build-web: ${name} holds absolute URLs: ${foreign.slice(0, 3).join(', ')}`);
}
if (gzip > BUDGET_GZIP_BYTES)
  throw new Error(`build-web: the bundle is ${(gzip / 1024).toFixed(1)} KB gzip, over the ${BUDGET_GZIP_BYTES / 1024} KB budget`);
writeFileSync(
  join(out, 'bundle.json'),
  `${JSON.stringify({ script, style, raw_bytes: raw, gzip_bytes: gzip, esbuild_ms: Math.round(esbuildMs) }, null, 2)}\n`,
);
console.log(
  `dashboard web: ${script} ${style}  ${(raw / 1024).toFixed(1)} KB, ${(gzip / 1024).toFixed(1)} KB gzip, esbuild ${Math.round(esbuildMs)} ms`,
);
