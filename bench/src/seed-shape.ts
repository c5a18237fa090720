/** The seed's shape: root → 998 leaves → terminal (1 000 tasks), every task a no-op `:`. */

export const LEAVES = 998;
export const TASKS = LEAVES + 2;

export function leafName(i: number): string {
  return `leaves/leaf-${String(i).padStart(4, '0')}`;
}

/** The workflow as submitted (raw JSON object). */
export function seedSource(): object {
  const tasks: object[] = [{ name: 'root', kwargs: { cmd: ':' } }];
  for (let i = 0; i < LEAVES; i++) tasks.push({ name: leafName(i), depends_on: ['root'], kwargs: { cmd: ':' } });
  tasks.push({ name: 'terminal', depends_on: Array.from({ length: LEAVES }, (_, i) => leafName(i)), kwargs: { cmd: ':' } });
  return { name: 'seed', tasks };
}
