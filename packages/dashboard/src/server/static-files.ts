import { readFile, realpath, stat } from 'node:fs/promises';
import { extname, join, resolve, sep } from 'node:path';

/** Content types of the files the bundle holds. */
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
};

/** A file of the web root, read and ready to send. */
export interface StaticFile {
  body: Buffer;
  contentType: string;
  /** Hashed asset names (`app-ABC123.js`) never change: they may be cached for long. */
  immutable: boolean;
}

/** The folder of the built web UI shipped in the package: `dist/web` beside `dist/server`. */
export function defaultWebRoot(): string {
  return resolve(__dirname, '..', 'web');
}

/**
 * Reads `urlPath` (already decoded, starting with `/`) from `root`; null when there is no such
 * file, and for every path that would leave the root (`..`, a symlink out, a NUL byte).
 */
export async function readStatic(root: string, urlPath: string): Promise<StaticFile | null> {
  if (urlPath.includes('\0') || urlPath.includes('\\')) return null;
  const segments = urlPath.split('/').filter((s) => s !== '');
  if (segments.some((s) => s === '..' || s === '.' || s.startsWith('.'))) return null;
  const base = resolve(root);
  const path = join(base, ...segments);
  if (path !== base && !path.startsWith(base + sep)) return null;
  try {
    const real = await realpath(path);
    const realBase = await realpath(base);
    if (!real.startsWith(realBase + sep)) return null;
    const info = await stat(real);
    if (!info.isFile()) return null;
    const body = await readFile(real);
    const ext = extname(real).toLowerCase();
    return {
      body,
      contentType: TYPES[ext] ?? 'application/octet-stream',
      immutable: /[.-][0-9A-Za-z_]{8,}\.[a-z]+$/.test(real) && ext !== '.html',
    };
  } catch {
    return null;
  }
}
