import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Hook, Interfaces } from '@oclif/core';

/**
 * Workflow ids in shell completion (docs/cli.md#shell-completion). `@oclif/plugin-autocomplete`
 * writes the bash and zsh completion functions of the commands and flags; after it has written them
 * (`jobq autocomplete …`), the arguments of the workflow commands that take an id (`workflow status
 * ID`, `workflow tasks [IDS…]`) are completed with `jobq autocomplete workflow-ids`, which reads the
 * configured deployment's index with a short timeout and reads nothing when none is configured.
 */

/** The workflow commands (`status`, `cancel`, …) whose first argument is a workflow id. */
export function idCommands(config: Interfaces.Config): string[] {
  return config.commands
    .filter((c) => !c.hidden && c.id.startsWith('workflow:') && c.id.split(':').length === 2)
    .filter((c) => ['id', 'ids'].includes(Object.keys(c.args ?? {})[0] ?? ''))
    .map((c) => c.id.slice('workflow:'.length))
    .sort();
}

/** Appended to the bash function file: wraps the plugin's completion function. */
export function bashIdCompletion(bin: string, commands: readonly string[]): string {
  return `
# ${bin}: workflow ids for the commands that take one (${bin} autocomplete workflow-ids)
_${bin}_autocomplete_with_ids()
{
  local cur="\${COMP_WORDS[COMP_CWORD]}" prefix=()
  if [[ "$cur" != -* && $COMP_CWORD -ge 3 && "\${COMP_WORDS[1]}" == "workflow" ]]; then
    [[ "\${COMP_WORDS[2]}" == */* ]] && prefix=(--prefix "\${COMP_WORDS[2]}")
    case "\${COMP_WORDS[COMP_CWORD-1]}" in
      ${commands.join('|')})
        COMPREPLY=($(compgen -W "$(${bin} autocomplete workflow-ids "\${prefix[@]}" 2>/dev/null)" -- "$cur"))
        return
        ;;
    esac
  fi
  _${bin}_autocomplete
}

complete -F _${bin}_autocomplete_with_ids ${bin}
`;
}

/** The zsh completion function of workflow ids. */
export function zshIdFunction(bin: string): string {
  return `
# ${bin}: workflow ids for the commands that take one (${bin} autocomplete workflow-ids)
_${bin}_workflow_ids() {
  local -a ids
  ids=(\${(f)"$(${bin} autocomplete workflow-ids 2>/dev/null)"})
  compadd -a ids
}
`;
}

/**
 * The zsh function file with the arguments of `_BIN_workflow`'s id commands completed by
 * `_BIN_workflow_ids` instead of files.
 */
export function patchZsh(text: string, bin: string, commands: readonly string[]): string {
  if (text.includes(`_${bin}_workflow_ids()`)) return text;
  const start = text.indexOf(`\n_${bin}_workflow() {`);
  if (start < 0) return text;
  const end = text.indexOf('\n}\n', start);
  let body = text.slice(start, end);
  for (const command of commands) {
    const at = body.indexOf(`\n        "${command}")\n`);
    if (at < 0) continue;
    const files = body.indexOf('"*: :_files"', at);
    const next = body.indexOf('\n        ;;', at);
    if (files < 0 || files > next) continue;
    body = `${body.slice(0, files)}"*: :_${bin}_workflow_ids"${body.slice(files + '"*: :_files"'.length)}`;
  }
  const header = text.indexOf('\n');
  return `${text.slice(0, header + 1)}${zshIdFunction(bin)}${text.slice(header + 1, start)}${body}${text.slice(end)}`;
}

/** Adds workflow-id completion to the function files the plugin wrote under the cache directory. */
export async function addIdCompletion(config: Interfaces.Config): Promise<void> {
  const dir = join(config.cacheDir, 'autocomplete', 'functions');
  const commands = idCommands(config);
  if (commands.length === 0) return;
  const bashFile = join(dir, 'bash', `${config.bin}.bash`);
  const bash = await readFile(bashFile, 'utf8').catch(() => null);
  if (bash !== null && !bash.includes(`_${config.bin}_autocomplete_with_ids`))
    await writeFile(bashFile, `${bash}${bashIdCompletion(config.bin, commands)}`);
  const zshFile = join(dir, 'zsh', `_${config.bin}`);
  const zsh = await readFile(zshFile, 'utf8').catch(() => null);
  if (zsh !== null) await writeFile(zshFile, patchZsh(zsh, config.bin, commands));
}

/** After `jobq autocomplete [SHELL]` (or its `--refresh-cache`) has written the completion functions. */
const hook: Hook<'postrun'> = async function (options) {
  if (options.Command.id === 'autocomplete' || options.Command.id === 'autocomplete:create') await addIdCompletion(options.config);
};

export default hook;
