import { parseArgs } from 'node:util';
import { ConfigError } from '../config/load.js';
import { safeError } from '../log/redact.js';
import { driverErrorOf } from '../store/errors.js';
import { VERSION } from '../version.js';
import { backup, backupHelp, BackupUsageError } from './backup.js';
import { ConfigCheckUsageError, configCheck, configCheckHelp } from './config-check.js';
import { controller, controllerHelp } from './controller.js';
import { renderCommandHelp, renderUsage, type CommandHelp } from './help.js';
import { migrateHelp, runMigrations } from './migrate.js';
import { reap, reapHelp, ReapUsageError } from './reap.js';
import { rotateCredentialsKey, rotateCredentialsKeyHelp } from './rotate-credentials-key.js';
import { serve, serveHelp } from './serve.js';

export class UsageError extends Error {
  constructor(
    message: string,
    /** Printed after the message: the command's synopsis, or the whole usage. */
    readonly usage: string,
  ) {
    super(message);
  }
}

interface Command {
  help: CommandHelp;
  /** Words after the command name it takes (reap's KIND). */
  positionals: number;
  options: NonNullable<Parameters<typeof parseArgs>[0]>['options'];
  run(values: Record<string, string | boolean | undefined>, positionals: string[]): Promise<void>;
}

const CONFIG = { config: { type: 'string' as const }, help: { type: 'boolean' as const, short: 'h' } };

const COMMANDS: Command[] = [
  { help: serveHelp, positionals: 0, options: CONFIG, run: (v) => serve(v.config as string | undefined) },
  { help: controllerHelp, positionals: 0, options: CONFIG, run: (v) => controller(v.config as string | undefined) },
  { help: migrateHelp, positionals: 0, options: CONFIG, run: (v) => runMigrations(v.config as string | undefined) },
  { help: reapHelp, positionals: 1, options: CONFIG, run: (v, p) => reap(v.config as string | undefined, p[0]) },
  { help: backupHelp, positionals: 1, options: CONFIG, run: (v, p) => backup(v.config as string | undefined, p[0]) },
  { help: rotateCredentialsKeyHelp, positionals: 0, options: CONFIG, run: (v) => rotateCredentialsKey(v.config as string | undefined) },
  {
    help: configCheckHelp,
    positionals: 0,
    options: { ...CONFIG, format: { type: 'string' } },
    run: (v) => configCheck(v.config as string | undefined, v.format as string | undefined),
  },
];

export const USAGE = renderUsage(COMMANDS.map((c) => c.help));

/** The closest command name, for "did you mean": at most two edits away. */
function closest(word: string): string | undefined {
  const distance = (a: string, b: string) => {
    const row = Array.from({ length: b.length + 1 }, (_, i) => i);
    for (let i = 1; i <= a.length; i++) {
      let previous = row[0];
      row[0] = i;
      for (let j = 1; j <= b.length; j++) {
        const current = row[j];
        row[j] = Math.min(row[j] + 1, row[j - 1] + 1, previous + (a[i - 1] === b[j - 1] ? 0 : 1));
        previous = current;
      }
    }
    return row[b.length];
  };
  const names = [...COMMANDS.map((c) => c.help.name.split(' ')[0]), 'help', 'version'];
  const best = names.map((n) => [n, distance(word, n)] as const).sort((a, b) => a[1] - b[1])[0];
  return best && best[1] <= 2 ? best[0] : undefined;
}

function unknownCommand(word: string): UsageError {
  const guess = closest(word);
  return new UsageError(`unknown command "${word}"${guess ? ` (did you mean "${guess}"?)` : ''}; run \`conveyor help\` for the list`, USAGE);
}

/** The command named by the leading words (`serve`, `config check`), and how many words it took. */
function findCommand(words: string[]): { command: Command; used: number } | undefined {
  if (words[0] === 'config') {
    if (words[1] === 'check' || words[1] === undefined) return { command: COMMANDS.find((c) => c.help === configCheckHelp)!, used: words[1] ? 2 : 1 };
    return undefined;
  }
  const command = COMMANDS.find((c) => c.help.name === words[0]);
  return command && { command, used: 1 };
}

function print(text: string): void {
  process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** `conveyor [command] [options]`; resolves when a one-shot command is done (serve and controller keep running). */
export async function main(argv: string[]): Promise<void> {
  // A first, lenient pass to find the command: options may come before or after it.
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: false,
    options: { config: { type: 'string' }, format: { type: 'string' }, help: { type: 'boolean', short: 'h' }, version: { type: 'boolean' } },
  });
  if (values.version === true || positionals[0] === 'version') {
    if (positionals.length > 1 || Object.keys(values).some((k) => k !== 'version')) throw new UsageError('version takes no arguments', 'usage: conveyor version');
    return print(VERSION);
  }
  if (positionals[0] === 'help') {
    const topic = positionals.slice(1);
    if (topic.length === 0) return print(USAGE);
    const found = findCommand(topic);
    if (!found || found.used !== topic.length) throw unknownCommand(topic.join(' '));
    return print(renderCommandHelp(found.command.help));
  }
  if (positionals.length === 0 && values.help === true) return print(USAGE);

  const found = positionals.length === 0 ? { command: COMMANDS[0], used: 0 } : findCommand(positionals);
  if (!found) {
    if (positionals[0] === 'config') throw new UsageError(`unknown config subcommand "${positionals[1]}"; the one there is: check`, `usage: ${configCheckHelp.synopsis}`);
    throw unknownCommand(positionals[0]);
  }
  const { command } = found;
  const synopsis = `usage: ${command.help.synopsis}\nRun \`conveyor ${command.help.name} --help\` for its options.`;
  if (values.help === true) return print(renderCommandHelp(command.help));
  if (positionals[0] === 'config' && found.used === 1) throw new UsageError('config needs a subcommand: check', synopsis);

  // The strict pass: only this command's own options, and only as many arguments as it takes.
  let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] };
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options: command.options }) as typeof parsed;
  } catch (err) {
    throw new UsageError((err as Error).message, synopsis);
  }
  const rest = parsed.positionals.slice(found.used);
  if (rest.length > command.positionals) throw new UsageError(`unexpected argument "${rest[command.positionals]}"`, synopsis);
  try {
    await command.run(parsed.values, rest);
  } catch (err) {
    if (err instanceof ReapUsageError || err instanceof BackupUsageError || err instanceof ConfigCheckUsageError) throw new UsageError(err.message, synopsis);
    throw err;
  }
}

/** Exit status and stderr for whatever main() threw: 2 for usage and configuration errors, else 1. */
export function reportFailure(err: unknown): number {
  if (err instanceof ConfigError) {
    process.stderr.write(`conveyor: ${err.message}\n`);
    return 2;
  }
  if (err instanceof UsageError) {
    process.stderr.write(`conveyor: ${err.message}\n\n${err.usage.trimEnd()}\n`);
    return 2;
  }
  // Not ours: a driver's message can quote SQL values, a URL its password (see safeError). A database that
  // could not serve is named by the driver's own error ("connect ECONNREFUSED ..."), not the store's type.
  process.stderr.write(`conveyor: ${safeError(driverErrorOf(err), false).message.split('\n')[0]}\n`);
  return 1;
}
