/**
 * The `ACCOUNT/PREFIX` and `ACCOUNT/QUEUE` positional shorthand (docs/cli.md#conventions), rewritten into flags
 * before oclif routes the command:
 *
 * - `jobq workflow ACCOUNT/PREFIX submit …` → `jobq workflow submit --prefix ACCOUNT/PREFIX …`
 * - `jobq ACCOUNT/QUEUE push …` → `jobq push --queue ACCOUNT/QUEUE …`
 *
 * Only a token containing `/` (and not starting with `-`) right after `jobq workflow` or right
 * after `jobq`, followed by a command name, is rewritten; everything else is passed through.
 */
export function rewriteArgv(argv: readonly string[]): string[] {
  const args = [...argv];
  const isShorthand = (token: string | undefined, next: string | undefined): boolean =>
    token !== undefined && !token.startsWith('-') && token.includes('/') && next !== undefined && /^[a-z][a-z-]*$/.test(next);
  if (args[0] === 'workflow' && isShorthand(args[1], args[2])) {
    const [, target, command, ...rest] = args;
    return ['workflow', command!, '--prefix', target!, ...rest];
  }
  if (isShorthand(args[0], args[1])) {
    const [target, command, ...rest] = args;
    return [command!, '--queue', target!, ...rest];
  }
  return args;
}
