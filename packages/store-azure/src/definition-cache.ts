import { createHash } from 'node:crypto';
import { type WorkflowDefinition } from '@jobq/dag-core';
import { encodeDefinition } from '@jobq/dag-core/wire';

/** The hash of each definition object whose stored bytes were hashed (or verified against a hash). */
const HASHES = new WeakMap<WorkflowDefinition, string>();

/** Limits of a {@link DefinitionCache}. */
export interface DefinitionCacheLimits {
  /** Definitions kept at most. Default 64. */
  maxEntries: number;
  /** Tasks over all definitions kept; the most recent one is kept whatever its size. Default 2 000 000. */
  maxTasks: number;
}

/**
 * Definitions by the sha256 of their stored bytes, least recently used out first. A definition
 * whose hash was verified once is decoded from here afterwards: no download, no validation, and
 * the same object every time (so what the reducer caches per definition object stays warm).
 * Hashes name content, so one cache serves every workflow and every store of a process.
 */
export class DefinitionCache {
  private readonly entries = new Map<string, WorkflowDefinition>();
  private tasks = 0;
  private readonly limits: DefinitionCacheLimits;

  constructor(limits: Partial<DefinitionCacheLimits> = {}) {
    this.limits = { maxEntries: limits.maxEntries ?? 64, maxTasks: limits.maxTasks ?? 2_000_000 };
  }

  get(hash: string): WorkflowDefinition | undefined {
    const definition = this.entries.get(hash);
    if (definition !== undefined) {
      this.entries.delete(hash);
      this.entries.set(hash, definition);
    }
    return definition;
  }

  /** Remembers `definition` as the one whose stored bytes hash to `hash` (the caller checked it). */
  set(hash: string, definition: WorkflowDefinition): void {
    const old = this.entries.get(hash);
    if (old !== undefined) {
      this.entries.delete(hash);
      this.tasks -= old.tasks.length;
    }
    this.entries.set(hash, definition);
    this.tasks += definition.tasks.length;
    HASHES.set(definition, hash);
    for (const [key, value] of this.entries) {
      if (this.entries.size <= 1 || (this.entries.size <= this.limits.maxEntries && this.tasks <= this.limits.maxTasks)) break;
      this.entries.delete(key);
      this.tasks -= value.tasks.length;
    }
  }

  get size(): number {
    return this.entries.size;
  }
}

/** The cache every store of this process shares unless given its own. */
export const PROCESS_DEFINITION_CACHE = new DefinitionCache();

/** sha256 hex of bytes. */
export function sha256Hex(bytes: Uint8Array | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * The stored bytes of a definition (`encodeDefinition`) and their hash. The hash is remembered per
 * definition object (the text is not: it can be tens of megabytes).
 */
export function encodedDefinition(definition: WorkflowDefinition): { bytes: Buffer; hash: string } {
  const bytes = Buffer.from(encodeDefinition(definition), 'utf8');
  const hash = sha256Hex(bytes);
  HASHES.set(definition, hash);
  return { bytes, hash };
}

/** The hash of a definition's stored bytes, computed once per definition object. */
export function definitionHashOf(definition: WorkflowDefinition): string {
  return HASHES.get(definition) ?? encodedDefinition(definition).hash;
}
