/**
 * The web UI as `pnpm build` leaves it in packages/dashboard/dist/web (built before these tests):
 * an index.html naming hashed files that exist, under the gzip budget, and no absolute URL but XML
 * namespace names (the page loads nothing from anywhere else).
 */
import { describe, expect, it } from '@jest/globals';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { REPO } from '../cli';

const WEB = join(REPO, 'packages', 'dashboard', 'dist', 'web');
const NAMESPACES = new Set([
  'http://www.w3.org/2000/svg',
  'http://www.w3.org/1999/xhtml',
  'http://www.w3.org/1998/Math/MathML',
  'http://www.w3.org/1999/xlink',
]);

describe('the built web UI', () => {
  const files = readdirSync(WEB);
  const index = readFileSync(join(WEB, 'index.html'), 'utf8');

  it('has an index.html naming its hashed script and stylesheet by root paths', () => {
    const named = [...index.matchAll(/(?:src|href)="\/([^"]+)"/g)].map((m) => m[1]!);
    expect(named).toEqual([
      expect.stringMatching(/^favicon\.svg$/),
      expect.stringMatching(/^style-[A-Z0-9]{8}\.css$/),
      expect.stringMatching(/^app-[A-Z0-9]{8}\.js$/),
    ]);
    for (const name of named) expect(files).toContain(name);
    expect(index).not.toMatch(/<script>|<style>|style="/);
  });

  it('stays under 80 KB gzip and holds no absolute URL but XML namespace names', () => {
    let gzip = 0;
    for (const name of files.filter((f) => /\.(js|css|html|svg)$/.test(f))) {
      const body = readFileSync(join(WEB, name));
      gzip += gzipSync(body).length;
      const urls = body.toString('utf8').match(/\b(?:https?:)?\/\/[a-z0-9.-]+\.[a-z]{2,}[^\s"'`)]*/gi) ?? [];
      expect([name, urls.filter((u) => !NAMESPACES.has(u))]).toEqual([name, []]);
    }
    expect(gzip).toBeLessThan(80 * 1024);
  });
});
