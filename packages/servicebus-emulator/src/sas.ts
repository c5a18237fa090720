/**
 * Shared Access Signature tokens, as Service Bus clients send them (CBS `put-token` on AMQP, the
 * `Authorization` header on the admin endpoint):
 * `SharedAccessSignature sr=<encoded resource>&sig=<encoded base64 HMAC-SHA256>&se=<expiry, Unix s>&skn=<key name>`,
 * the signature being the HMAC, keyed by the key's UTF-8 bytes, of `<sr as sent>\n<se>`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export type SasVerdict = { ok: true; resource: string; keyName: string; expiresAt: number } | { ok: false; reason: string };

/** Checks `token` against one key; `nowMs` is the time its expiry is compared with. Never echoes the key or the signature. */
export function verifySasToken(token: string, key: { keyName: string; key: string }, nowMs: number): SasVerdict {
  const prefix = 'SharedAccessSignature ';
  if (!token.startsWith(prefix)) return { ok: false, reason: 'not a SharedAccessSignature token' };
  const fields = new Map<string, string>();
  for (const part of token.slice(prefix.length).split('&')) {
    const eq = part.indexOf('=');
    if (eq > 0) fields.set(part.slice(0, eq), part.slice(eq + 1));
  }
  const sr = fields.get('sr');
  const sig = fields.get('sig');
  const se = fields.get('se');
  const skn = fields.get('skn');
  if (sr === undefined || sig === undefined || se === undefined || skn === undefined)
    return { ok: false, reason: 'the token lacks sr, sig, se or skn' };
  let keyName: string;
  let resource: string;
  let signature: Buffer;
  try {
    keyName = decodeURIComponent(skn);
    resource = decodeURIComponent(sr);
    signature = Buffer.from(decodeURIComponent(sig), 'base64');
  } catch {
    return { ok: false, reason: 'the token is not URL-encoded' };
  }
  if (keyName !== key.keyName) return { ok: false, reason: `unknown key name "${keyName.slice(0, 64)}"` };
  const expiresAt = Number(se);
  if (!Number.isFinite(expiresAt)) return { ok: false, reason: 'the token expiry is not a number' };
  const expected = createHmac('sha256', Buffer.from(key.key, 'utf8')).update(`${sr}\n${se}`, 'utf8').digest();
  if (signature.length !== expected.length || !timingSafeEqual(signature, expected))
    return { ok: false, reason: 'the signature does not match the key' };
  if (expiresAt * 1000 <= nowMs) return { ok: false, reason: `the token expired at ${new Date(expiresAt * 1000).toISOString()}` };
  return { ok: true, resource, keyName, expiresAt: expiresAt * 1000 };
}

/** A token as the SDK makes one (for tests and for clients of the emulator written by hand). */
export function createSasToken(resource: string, key: { keyName: string; key: string }, expiresAtMs: number): string {
  const sr = encodeURIComponent(resource.toLowerCase());
  const se = String(Math.floor(expiresAtMs / 1000));
  const sig = createHmac('sha256', Buffer.from(key.key, 'utf8')).update(`${sr}\n${se}`, 'utf8').digest('base64');
  return `SharedAccessSignature sr=${sr}&sig=${encodeURIComponent(sig)}&se=${se}&skn=${encodeURIComponent(key.keyName)}`;
}
