import { dirname, join } from 'node:path';
import { Errors, ModuleLoader, toConfiguredId, type Hook, type Interfaces } from '@oclif/core';

type Config = Interfaces.Config;

/** What jobq takes from `@oclif/plugin-not-found`: its hook (the interactive "did you mean" prompt) and its closest-match search. */
interface NotFoundPlugin {
  hook: Hook<'command_not_found'>;
  closest(target: string, possibilities: string[]): string;
}

async function loadNotFoundPlugin(config: Config): Promise<NotFoundPlugin> {
  // The plugin exports only its hook; its closest-match search sits next to it (pinned version, see package.json).
  const lib = dirname(require.resolve('@oclif/plugin-not-found'));
  const hook = await ModuleLoader.load<{ default: Hook<'command_not_found'> }>(config, join(lib, 'index.js'));
  const utils = await ModuleLoader.load<{ default: { closest(this: void, target: string, possibilities: string[]): string } }>(
    config,
    join(lib, 'utils.js'),
  );
  return { hook: hook.default, closest: utils.default.closest };
}

/** The ids a suggestion may name: every visible command and alias, and the topics (`wrkflow` → `workflow`). */
function visibleCommandIds(config: Config): string[] {
  const hidden = new Set(config.commands.filter((c) => c.hidden).map((c) => c.id));
  const commands = [...config.commandIDs, ...config.commands.flatMap((c) => c.aliases)].filter((id) => !hidden.has(id));
  return [...commands, ...config.topics.filter((t) => !t.hidden).map((t) => t.name)];
}

/**
 * The unknown part of what was typed: topics, then the first word that is not one (`workflow stat abc`
 * → `workflow:stat`; oclif joins every word before the first flag into the id).
 */
function typedCommand(config: Config, id: string): string {
  const words = id.split(':');
  let end = 1;
  while (end < words.length && config.findTopic(words.slice(0, end).join(':'))) end += 1;
  return words.slice(0, end).join(':');
}

/** `jobq help TOPIC` when the unknown command starts with a topic, else `jobq help`. */
function helpCommand(config: Config, id: string): string {
  const topic = id.split(':')[0] ?? '';
  return config.findTopic(topic) ? `${config.bin} help ${topic}` : `${config.bin} help`;
}

/**
 * An unknown command (docs/cli.md#conventions): one line on stderr naming the closest command, exit 2.
 * In a terminal, `@oclif/plugin-not-found` asks whether to run the closest command instead; when stdin
 * is not a terminal (scripts, CI) nothing is asked.
 */
const hook: Hook<'command_not_found'> = async function (options) {
  const { config } = options;
  const id = typedCommand(config, options.id);
  const typed = toConfiguredId(id, config);
  const plugin = await loadNotFoundPlugin(config);
  const ids = visibleCommandIds(config);
  const suggestion = ids.length > 0 ? toConfiguredId(plugin.closest(id, ids), config) : '';
  const notACommand = `${config.bin}: "${typed}" is not a ${config.bin} command`;
  const seeHelp = `see "${helpCommand(config, id)}"`;
  const fail = (): never => {
    process.stderr.write(
      suggestion === '' ? `${notACommand}; ${seeHelp}\n` : `${notACommand}; did you mean "${suggestion}"? (${seeHelp})\n`,
    );
    return Errors.exit(2);
  };
  if (!process.stdin.isTTY || suggestion === '') return fail();
  // A terminal: the plugin's prompt ("Did you mean …?"), which runs the suggestion when confirmed.
  // Its warning becomes jobq's line; declining exits 2 like the non-terminal case.
  const declined = new Error('declined');
  const context = {
    ...this,
    warn: (): void => {
      process.stderr.write(`${notACommand}\n`);
    },
    error: (): never => {
      throw declined;
    },
  };
  try {
    // The words oclif joined into the id after the unknown one are arguments of the suggestion.
    const rest = options.id.split(':').slice(id.split(':').length);
    const result: unknown = await plugin.hook.call(context, { ...options, id, argv: [...rest, ...(options.argv ?? [])] });
    return result;
  } catch (error) {
    if (error === declined) return Errors.exit(2);
    throw error;
  }
};

export default hook;
